import { describeFailure } from "../agent/gemini-errors.js";
import { GEMINI_API_URL, lazyGenAi, requestSignal } from "../agent/genai-sdk.js";
import type { SharedLimit } from "../retry/shared-limit.js";

/**
 * Dimensions asked of the embedding model (outputDimensionality). Gemini's embedding model
 * learns its vectors so that their first dimensions carry the most (Matryoshka), and 256 keep a
 * search over 100,000 events of a scope within its latency target (bench/README.md).
 */
export const EMBEDDING_DIMENSIONS = 256;

export type EmbedTask = "RETRIEVAL_DOCUMENT" | "RETRIEVAL_QUERY";

/**
 * How long one embedding may take, the wait for the shared limit included. A search's query is
 * embedded while a turn waits, and its words still find without it; a batch of history is taken
 * again later by the queue. Without a deadline, a Gemini that never answers held either for the
 * five minutes of Node's own fetch.
 */
export const EMBED_TIMEOUT_MS: Readonly<Record<EmbedTask, number>> = {
  RETRIEVAL_QUERY: 10_000,
  RETRIEVAL_DOCUMENT: 60_000,
};

/** Texts in, one unit-length vector each out, in order; `signal` gives up on them (a stop). */
export type Embed = (
  texts: readonly string[],
  task: EmbedTask,
  signal?: AbortSignal,
) => Promise<Float32Array[]>;

export class EmbeddingFailedError extends Error {
  /**
   * What failed is the texts themselves (Gemini refused them, 400, or answered them with the
   * wrong vectors), not Gemini, the network, the quota or the settings, which recover.
   */
  readonly aboutTexts: boolean;

  constructor(
    reason: string,
    readonly status: number | undefined,
    aboutTexts = false,
  ) {
    super(`Gemini could not embed: ${reason}`);
    this.name = "EmbeddingFailedError";
    this.aboutTexts = aboutTexts;
  }
}

/** What an embedding its caller gave up on throws: the caller's reason, an Error whatever it was. */
const stoppedBy = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error("the embedding was stopped");

/** Scales a vector to length 1, so that a dot product is its cosine similarity. */
export function normalize(values: ArrayLike<number>): Float32Array {
  const vector = Float32Array.from(values);
  let sum = 0;
  for (const v of vector) sum += v * v;
  const norm = Math.sqrt(sum) || 1;
  for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}

/**
 * Gemini's embedContent through the SDK (which sends a batch as batchEmbedContents), one request
 * per call and no retries of its own: the embedding queue retries. It passes the shared limit
 * every Gemini call of the process passes, so a 429 holds back turns and embeddings alike.
 */
export function createGeminiEmbedder(deps: {
  apiKey: string;
  baseUrl?: string | undefined;
  model: string;
  limit: SharedLimit;
  /** In place of EMBED_TIMEOUT_MS (tests). */
  timeoutMs?: Partial<Record<EmbedTask, number>>;
}): Embed {
  const loadSdk = lazyGenAi({ apiKey: deps.apiKey, baseUrl: deps.baseUrl, fetch });
  return async (texts, task, signal) => {
    const { ai, apiError } = await loadSdk();
    const timeoutMs = deps.timeoutMs?.[task] ?? EMBED_TIMEOUT_MS[task];
    const deadline = Date.now() + timeoutMs;
    const pass = await deps.limit.enter(deadline, signal);
    if (pass === undefined) {
      if (signal?.aborted) throw stoppedBy(signal);
      throw new EmbeddingFailedError("the API key's quota is spent (429); waiting", 429);
    }
    const request = requestSignal(Math.max(0, deadline - Date.now()), signal);
    let outcome: Parameters<typeof pass.done>[0] = { limited: false };
    try {
      if (signal?.aborted) throw stoppedBy(signal);
      const response = await ai.models.embedContent({
        model: deps.model,
        contents: [...texts],
        config: {
          taskType: task,
          outputDimensionality: EMBEDDING_DIMENSIONS,
          abortSignal: request.signal,
        },
      });
      const vectors = (response.embeddings ?? []).map((e) => normalize(e.values ?? []));
      if (
        vectors.length !== texts.length ||
        vectors.some((v) => v.length !== EMBEDDING_DIMENSIONS)
      ) {
        throw new EmbeddingFailedError(
          `expected ${texts.length} vectors of ${EMBEDDING_DIMENSIONS} dimensions, got ${vectors.length}`,
          undefined,
          true,
        );
      }
      return vectors;
    } catch (error) {
      if (error instanceof EmbeddingFailedError) throw error;
      if (signal?.aborted) throw stoppedBy(signal);
      const failure = describeFailure(error, deps.apiKey, apiError, {
        url: deps.baseUrl ?? GEMINI_API_URL,
        timeoutMs,
      });
      if (failure.status === 429) {
        outcome = { limited: true, serverDelayMs: failure.retryAfterMs };
      }
      // A wrong API key is a 400 too, and recovers once it is set right: only input counts.
      throw new EmbeddingFailedError(failure.reason, failure.status, failure.inputRefused === true);
    } finally {
      request.dispose();
      pass.done(outcome);
    }
  };
}
