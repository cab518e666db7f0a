import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RATE_LIMIT_BACKOFF } from "../../src/agent/gemini-client.js";
import {
  createGeminiEmbedder,
  EMBEDDING_DIMENSIONS,
  EmbeddingFailedError,
} from "../../src/recall/gemini-embedder.js";
import { createSharedLimit } from "../../src/retry/shared-limit.js";
import { type FakeGemini, startFakeGemini } from "../fakes/gemini.js";

/** The embedder against the fake Gemini, through the SDK: what it gives, and when it gives up. */

let fake: FakeGemini;
beforeAll(async () => {
  fake = await startFakeGemini();
});
afterAll(() => fake.close());

const embedder = (timeoutMs = { RETRIEVAL_QUERY: 300, RETRIEVAL_DOCUMENT: 600 }) =>
  createGeminiEmbedder({
    apiKey: "test-key",
    baseUrl: fake.baseUrl,
    model: "gemini-embedding-001",
    limit: createSharedLimit({ policy: RATE_LIMIT_BACKOFF }),
    timeoutMs,
  });

const length = (vector: Float32Array) => Math.hypot(...vector);

describe("the Gemini embedder", () => {
  it("gives one unit-length vector of 256 dimensions per text, in order, in one request", async () => {
    const before = fake.embeddings.length;
    const vectors = await embedder()(["a cat", "a dog", "the tax return"], "RETRIEVAL_DOCUMENT");
    expect(vectors.map((v) => v.length)).toEqual([3, 3, 3].map(() => EMBEDDING_DIMENSIONS));
    for (const vector of vectors) expect(length(vector)).toBeCloseTo(1, 5);
    expect(fake.embeddings.slice(before)).toMatchObject([{ method: "batchEmbedContents" }]);
  });

  it.each([
    ["a search's query", "RETRIEVAL_QUERY", 0.3],
    ["a batch of history", "RETRIEVAL_DOCUMENT", 0.6],
  ] as const)(
    "gives up on %s Gemini does not answer at its own deadline",
    async (_, task, seconds) => {
      const stalled = fake.stallEmbeddings();
      const started = Date.now();
      const failure = await embedder()(["where did we eat"], task).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(EmbeddingFailedError);
      expect((failure as Error).message).toContain(`before the timeout of ${seconds} s`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(seconds * 1000 - 50);
      await stalled.hungUp;
    },
  );

  it("ends at once when its caller gives up (a stopped turn), with the caller's reason", async () => {
    const stalled = fake.stallEmbeddings();
    const stop = new AbortController();
    const embedding = embedder({ RETRIEVAL_QUERY: 60_000, RETRIEVAL_DOCUMENT: 60_000 })(
      ["where did we eat"],
      "RETRIEVAL_QUERY",
      stop.signal,
    );
    await stalled.arrived;
    stop.abort(new Error("stopped by the user"));
    await expect(embedding).rejects.toThrow("stopped by the user");
    await stalled.hungUp;
  });
});
