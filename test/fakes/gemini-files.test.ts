import { createPartFromUri, GoogleGenAI } from "@google/genai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { apiErrorOf } from "../helpers/api-error.js";
import { type FakeGemini, startFakeGemini } from "./gemini.js";

const MODEL = "gemini-test";

describe("fake Gemini's Files API through the real SDK", () => {
  let fake: FakeGemini;
  let ai: GoogleGenAI;

  const upload = (bytes: Buffer, mimeType: string) =>
    ai.files.upload({ file: new Blob([bytes]), config: { mimeType, displayName: "x" } });
  const askAbout = (uri: string, mimeType: string) =>
    ai.models.generateContent({
      model: MODEL,
      contents: [{ role: "user", parts: [createPartFromUri(uri, mimeType), { text: "what?" }] }],
    });

  beforeEach(async () => {
    fake = await startFakeGemini({ apiKey: "test-key" });
    ai = new GoogleGenAI({
      apiKey: "test-key",
      vertexai: false,
      httpOptions: { baseUrl: fake.baseUrl },
    });
  });
  afterEach(() => fake.close());

  it("takes an upload in 8 MB chunks and serves it by uri, byte for byte", async () => {
    const bytes = Buffer.alloc(9 * 1024 * 1024, 3);
    const file = await upload(bytes, "image/png");
    expect(file).toMatchObject({ mimeType: "image/png", sizeBytes: String(bytes.length) });
    expect(file.state).toBe("ACTIVE");
    expect(Date.parse(file.expirationTime ?? "") - Date.now()).toBeGreaterThan(47 * 3600 * 1000);
    expect(fake.files.files.get(file.name ?? "")?.bytes.equals(bytes)).toBe(true);
    expect(fake.files.uploaded).toEqual([
      { name: file.name, mimeType: "image/png", size: bytes.length },
    ]);
    expect((await ai.files.get({ name: file.name ?? "" })).uri).toBe(file.uri);
    const answer = await askAbout(file.uri ?? "", "image/png");
    expect(answer.text).toBe("ok");
    expect(fake.rejections).toEqual([]);
  });

  it("processes a video before it can be used, and fails one when told", async () => {
    const video = await upload(Buffer.alloc(1000, 1), "video/mp4");
    expect(video.state).toBe("PROCESSING");
    const early = await apiErrorOf(askAbout(video.uri ?? "", "video/mp4"));
    expect(early.status).toBe(400);
    expect(early.message).toContain("is not in an ACTIVE state");
    expect((await ai.files.get({ name: video.name ?? "" })).state).toBe("PROCESSING");
    expect((await ai.files.get({ name: video.name ?? "" })).state).toBe("ACTIVE");
    expect((await askAbout(video.uri ?? "", "video/mp4")).text).toBe("ok");

    fake.files.failProcessing();
    const broken = await upload(Buffer.alloc(1000, 2), "video/mp4");
    await ai.files.get({ name: broken.name ?? "" });
    const failed = await ai.files.get({ name: broken.name ?? "" });
    expect(failed.state).toBe("FAILED");
    expect(failed.error?.message).toBeTruthy();
  });

  it("forgets an expired file: get and generateContent answer 403", async () => {
    const file = await upload(Buffer.alloc(100, 4), "application/pdf");
    fake.files.expire();
    const id = (file.name ?? "").replace("files/", "");
    const gone = await apiErrorOf(askAbout(file.uri ?? "", "application/pdf"));
    expect(gone.status).toBe(403);
    expect(gone.message).toContain(
      `You do not have permission to access the File ${id} or it may not exist.`,
    );
    expect((await apiErrorOf(ai.files.get({ name: file.name ?? "" }))).status).toBe(403);
  });

  it("refuses what Gemini refuses: a wrong key, an unknown MIME type, a mismatched one", async () => {
    const stranger = new GoogleGenAI({
      apiKey: "wrong",
      vertexai: false,
      httpOptions: { baseUrl: fake.baseUrl },
    });
    const denied = await apiErrorOf(
      stranger.files.upload({
        file: new Blob([Buffer.alloc(10)]),
        config: { mimeType: "image/png" },
      }),
    );
    expect(denied.status).toBe(400);
    expect((await apiErrorOf(upload(Buffer.alloc(10), "application/zip"))).message).toContain(
      "Unsupported MIME type",
    );
    const file = await upload(Buffer.alloc(10, 5), "image/png");
    const mismatch = await apiErrorOf(askAbout(file.uri ?? "", "image/jpeg"));
    expect(mismatch.status).toBe(400);
    expect(mismatch.message).toContain("does not match");
  });
});
