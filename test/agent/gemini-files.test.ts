import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GeminiRefusedError } from "../../src/agent/gemini-errors.js";
import { createGeminiFiles, GeminiFileRefusedError } from "../../src/agent/gemini-files.js";
import { type FakeGemini, startFakeGemini } from "../fakes/gemini.js";
import { captureLogger } from "../helpers/logs.js";

describe("Gemini's Files API client against the fake", () => {
  let fake: FakeGemini;
  const { logger } = captureLogger();
  const files = (apiKey = "right") =>
    createGeminiFiles({ apiKey, baseUrl: fake.baseUrl, logger, pollMs: 1, sleep: async () => {} });
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error,
    );

  beforeEach(async () => {
    fake = await startFakeGemini({ apiKey: "right" });
  });
  afterEach(() => fake.close());

  it("uploads a file and gives its name, uri and expiry", async () => {
    const uploaded = await files().upload(Buffer.alloc(1_000, 1), "application/pdf", "doc");
    expect(uploaded).toMatchObject({ mimeType: "application/pdf" });
    const held = fake.files.files.get(uploaded.name);
    expect(held?.uri).toBe(uploaded.uri);
    expect(held?.expirationTime).toBe(uploaded.expiresAt);
  });

  it("waits while Gemini processes a video, and fails one it could not process", async () => {
    const video = await files().upload(Buffer.alloc(1_000, 2), "video/mp4", "clip");
    expect(fake.files.files.get(video.name)?.state).toBe("ACTIVE");
    fake.files.failProcessing();
    const broken = await failure(files().upload(Buffer.alloc(1_000, 3), "video/mp4", "broken"));
    expect(broken).toBeInstanceOf(GeminiFileRefusedError);
  });

  it("tells a file Gemini refuses from a key it refuses", async () => {
    const zip = await failure(files().upload(Buffer.alloc(10), "application/zip", "z"));
    expect(zip).toBeInstanceOf(GeminiFileRefusedError);
    expect((zip as Error).message).toMatch(/Unsupported MIME type/);
    const key = await failure(files("wrong").upload(Buffer.alloc(10), "image/png", "p"));
    expect(key).toBeInstanceOf(GeminiRefusedError);
    expect(key).not.toBeInstanceOf(GeminiFileRefusedError);
    expect((key as Error).message).toMatch(/API key not valid/);
  });
});
