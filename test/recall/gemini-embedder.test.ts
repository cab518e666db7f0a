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

const SHORT = { RETRIEVAL_QUERY: 300, RETRIEVAL_DOCUMENT: 600 };

const embedder = (
  timeoutMs?: typeof SHORT,
  limit = createSharedLimit({ policy: RATE_LIMIT_BACKOFF }),
) =>
  createGeminiEmbedder({
    apiKey: "test-key",
    baseUrl: fake.baseUrl,
    model: "gemini-embedding-001",
    limit,
    ...(timeoutMs ? { timeoutMs } : {}),
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
      const failure = await embedder(SHORT)(["where did we eat"], task).catch(
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(EmbeddingFailedError);
      expect((failure as Error).message).toContain(`before the timeout of ${seconds} s`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(seconds * 1000 - 50);
      await stalled.hungUp;
    },
  );

  it("tells texts Gemini refuses from a wrong API key, which a 400 says too", async () => {
    const empty = await embedder()(["   "], "RETRIEVAL_DOCUMENT").catch((error: unknown) => error);
    expect(empty).toMatchObject({ name: "EmbeddingFailedError", status: 400, aboutTexts: true });
    const keyed = await startFakeGemini({ apiKey: "the-right-key" });
    try {
      const wrongKey = createGeminiEmbedder({
        apiKey: "a-wrong-key",
        baseUrl: keyed.baseUrl,
        model: "gemini-embedding-001",
        limit: createSharedLimit({ policy: RATE_LIMIT_BACKOFF }),
      });
      const refused = await wrongKey(["where"], "RETRIEVAL_DOCUMENT").catch((e: unknown) => e);
      expect(refused).toMatchObject({
        name: "EmbeddingFailedError",
        status: 400,
        aboutTexts: false,
      });
    } finally {
      await keyed.close();
    }
  });

  it("ends at once when its caller gives up (a stopped turn), with the caller's reason", async () => {
    const stalled = fake.stallEmbeddings();
    const stop = new AbortController();
    const embedding = embedder()(["where did we eat"], "RETRIEVAL_QUERY", stop.signal);
    await stalled.arrived;
    stop.abort(new Error("stopped by the user"));
    await expect(embedding).rejects.toThrow("stopped by the user");
    await stalled.hungUp;
  });

  it("waiting for a shared limit Gemini closed (429), ends at once when its caller gives up", async () => {
    const limit = createSharedLimit({ policy: RATE_LIMIT_BACKOFF });
    const closing = await limit.enter(Date.now() + 1_000);
    // Closed for less than a query's deadline, so that the embedding waits rather than gives up.
    closing?.done({ limited: true, serverDelayMs: 5_000 });
    const before = fake.embeddings.length;
    const stop = new AbortController();
    const embedding = embedder(undefined, limit)(
      ["where did we eat"],
      "RETRIEVAL_QUERY",
      stop.signal,
    );
    await new Promise((resolve) => setImmediate(resolve));
    stop.abort(new Error("stopped by the user"));
    // Well before the limit opens again, which a wait deaf to the stop would sit out.
    const late = new Promise<"late">((resolve) => setTimeout(resolve, 2_500, "late").unref());
    const ended = await Promise.race([embedding.catch((error: unknown) => error), late]);
    expect(ended).toMatchObject({ message: "stopped by the user" });
    expect(fake.embeddings.length).toBe(before);
  });
});
