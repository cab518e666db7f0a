import { setTimeout as sleep } from "node:timers/promises";
import type { Kysely } from "kysely";
import type { Now } from "../db/clock.js";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import { backoffDelay } from "../retry/backoff.js";
import type { EmbeddingQueue } from "./embedding-queue.js";
import { type Embed, EmbeddingFailedError } from "./gemini-embedder.js";

/** One chunk of a long event: Gemini embeds at most 2,048 tokens of a text. */
export const CHUNK_CHARS = 2_000;
/** Chunks embedded per event: the rest of a very long one is found by its words only. */
export const MAX_CHUNKS = 4;
/** Events claimed at a time. */
const BATCH = 64;
/** Texts in one request (the API takes at most 100). */
const TEXTS_PER_REQUEST = 100;
const IDLE_MS = 2_000;
const MAX_ATTEMPTS = 5;
const RETRY_MS = 30_000;
const PROGRESS_EVERY_MS = 10_000;
/** After a failed step (Gemini or the database away), as every retry loop waits. */
const FAILURE_BACKOFF = { baseMs: 1_000, maxMs: RETRY_MS };

const refusedTexts = (error: unknown): boolean =>
  error instanceof EmbeddingFailedError && error.aboutTexts;

/** The pieces of an event's text that are embedded, cut between words where it can. */
export function chunksOf(text: string): string[] {
  // Only runs other than one space are replaced: most texts have none, and stay the same string.
  const flat = text.replace(/ ?[^\S ]\s*| {2,}\s*/g, " ").trim();
  const chunks: string[] = [];
  let rest = flat;
  while (rest !== "" && chunks.length < MAX_CHUNKS) {
    if (rest.length <= CHUNK_CHARS) {
      chunks.push(rest);
      break;
    }
    const space = rest.lastIndexOf(" ", CHUNK_CHARS);
    const cut = space > CHUNK_CHARS / 2 ? space : CHUNK_CHARS;
    chunks.push(rest.slice(0, cut).toWellFormed());
    rest = rest.slice(cut).trim();
  }
  return chunks;
}

/**
 * Embeds what the queue holds, batch by batch, in the background: the service runs one per
 * process (replicas share the queue), tests call runOnce. Progress goes to the log and, through
 * `onEmbedded`, to /metrics.
 */
export function createEmbeddingWorker(deps: {
  db: Kysely<Database>;
  queue: EmbeddingQueue;
  embed: Embed;
  model: string;
  logger: Logger;
  onEmbedded?(events: number): void;
}) {
  const { db, queue, logger } = deps;
  /** Ends the loop, and the request under way with it (shutdown need not wait for Gemini). */
  const stop = new AbortController();
  let embeddedSinceLog = 0;
  let lastLog = Date.now();

  async function logProgress(force: boolean): Promise<void> {
    if (!force && Date.now() - lastLog < PROGRESS_EVERY_MS) return;
    const backlog = await queue.backlog();
    if (embeddedSinceLog > 0 || force) {
      logger.info(
        { embedded: embeddedSinceLog, backlog },
        backlog === 0
          ? "embedded everything recall can find by meaning"
          : "embedding history for recall by meaning",
      );
    }
    embeddedSinceLog = 0;
    lastLog = Date.now();
  }

  /**
   * One step: intake, then one batch claimed and embedded. Returns the work it did (0: idle).
   * `now` times the leases: the service gives its database clock, as to every lease it takes.
   */
  async function runOnce(now: Now = Date.now): Promise<number> {
    const taken = await queue.intake();
    const claimed = await queue.claim(BATCH, now());
    if (claimed.length === 0) return taken;
    const ids = claimed.map((c) => c.messageId);
    const rows = await db
      .selectFrom("messages")
      .select(["id", "scope", "search_text"])
      .where("id", "in", ids)
      .where("forgotten_at", "is", null)
      .execute();
    const pieces = rows.flatMap((row) =>
      chunksOf(row.search_text).map((text) => ({ id: row.id, scope: row.scope, text })),
    );
    const vectors: Float32Array[] = [];
    try {
      for (let i = 0; i < pieces.length; i += TEXTS_PER_REQUEST) {
        const texts = pieces.slice(i, i + TEXTS_PER_REQUEST).map((p) => p.text);
        vectors.push(...(await deps.embed(texts, "RETRIEVAL_DOCUMENT", stop.signal)));
      }
    } catch (error) {
      // Only Gemini refusing the texts counts as an attempt: an outage, a spent quota or a
      // wrong model name ends some day, and what was said meanwhile is embedded then.
      if (stop.signal.aborted || !refusedTexts(error)) {
        await queue.putBack(ids);
        throw error;
      }
      const dropped = await queue.release(ids, now() + RETRY_MS, MAX_ATTEMPTS);
      if (dropped > 0) {
        logger.warn(
          { events: dropped, attempts: MAX_ATTEMPTS },
          "gave up embedding some events; they are found by their words only",
        );
      }
      throw error;
    }
    const byEvent = new Map<
      number,
      Array<{ scope: string; model: string; values: Float32Array }>
    >();
    pieces.forEach((piece, i) => {
      const list = byEvent.get(piece.id) ?? [];
      list.push({ scope: piece.scope, model: deps.model, values: vectors[i] as Float32Array });
      byEvent.set(piece.id, list);
    });
    const stored = await queue.complete(byEvent, ids);
    embeddedSinceLog += stored;
    deps.onEmbedded?.(stored);
    await logProgress(false);
    return claimed.length;
  }

  let running: Promise<void> | undefined;

  async function loop(now: Now): Promise<void> {
    let failures = 0;
    while (!stop.signal.aborted) {
      let worked = 0;
      try {
        worked = await runOnce(now);
        failures = 0;
      } catch (error) {
        if (stop.signal.aborted) break;
        failures++;
        logger.warn({ err: error }, "embedding for recall by meaning failed; trying again later");
      }
      if (worked > 0) continue;
      if (failures === 0) await logProgress(embeddedSinceLog > 0).catch(() => {});
      const wait = failures === 0 ? IDLE_MS : backoffDelay(failures, FAILURE_BACKOFF, Math.random);
      await sleep(wait, undefined, { signal: stop.signal }).catch(() => {});
    }
  }

  return {
    runOnce,
    /** Runs until there is nothing left to do now (tests, the benchmark). */
    async drain(now?: Now): Promise<void> {
      while ((await runOnce(now)) > 0) {}
    },
    /** Runs in the background until stopped, timing leases by `now` (the database's clock). */
    start(now: Now = Date.now): void {
      running ??= loop(now);
    },
    async stop(): Promise<void> {
      stop.abort();
      await running;
    },
  };
}

export type EmbeddingWorker = ReturnType<typeof createEmbeddingWorker>;
