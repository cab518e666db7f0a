import { randomUUID } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { Config } from "../config.js";
import type { DatabaseHandle } from "../db/connect.js";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { SharedLimit } from "../retry/shared-limit.js";
import { scopeKeyOf } from "./area.js";
import { createEmbeddingQueue, inIdOrder } from "./embedding-queue.js";
import { createEmbeddingWorker } from "./embedding-worker.js";
import { createGeminiEmbedder, type Embed } from "./gemini-embedder.js";
import { createVectorSearch, hasPgvector } from "./vector-search.js";

/**
 * A claim on queued events lasts this long; a worker that died lets them go after it. A batch
 * takes at most three requests, each ended at EMBED_TIMEOUT_MS's minute, so a live worker is
 * done before its claim runs out.
 */
const LEASE_MS = 5 * 60_000;

/**
 * Recall by meaning, assembled: the embedder (GEMINI_EMBEDDING_MODEL), the vector search the
 * database allows, and the background worker that embeds the queue. Undefined when it is off.
 */
export async function createMeaning(deps: {
  config: Pick<Config, "geminiEmbeddingModel" | "geminiApiKey" | "geminiBaseUrl">;
  database: DatabaseHandle;
  limit: SharedLimit;
  logger: Logger;
  metrics?: Pick<Metrics, "embedded" | "watchEmbeddingBacklog">;
  /** Replaces Gemini (tests, the benchmark's fake embedder). */
  embed?: Embed;
}) {
  const model = deps.config.geminiEmbeddingModel;
  if (model === undefined) return undefined;
  const { db } = deps.database;
  const embed =
    deps.embed ??
    createGeminiEmbedder({
      apiKey: deps.config.geminiApiKey,
      baseUrl: deps.config.geminiBaseUrl,
      model,
      limit: deps.limit,
    });
  const pgvector = await hasPgvector(db);
  const vectors = createVectorSearch({
    db,
    engine: pgvector ? "pgvector" : "exact",
    model,
  });
  deps.logger.debug({ engine: vectors.engine, model }, "recall by meaning is on");
  const queue = createEmbeddingQueue({ db, worker: randomUUID(), leaseMs: LEASE_MS });
  // At start, and only after a change of model: however many vectors the old one left.
  const dropped = await deps.database.unbounded(() => queue.adoptModel(model));
  if (dropped > 0) {
    deps.logger.info(
      { model, vectors: dropped },
      "GEMINI_EMBEDDING_MODEL changed: the old model's vectors are deleted and their events embedded again",
    );
  }
  deps.metrics?.watchEmbeddingBacklog(() => queue.backlog());
  const worker = createEmbeddingWorker({
    db,
    queue,
    embed,
    model,
    logger: deps.logger,
    onEmbedded: (events) => deps.metrics?.embedded(events),
  });
  return { embed, vectors, queue, worker };
}

/** Drops what was derived from forgotten events: their vectors, and their place in the queue. */
export async function forgetEmbeddings(
  db: Kysely<Database>,
  ids: readonly number[],
): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    const part = ids.slice(i, i + 500);
    await db.deleteFrom("embeddings").where("message_id", "in", part).execute();
    await db.deleteFrom("embedding_queue").where("message_id", "in", part).execute();
  }
}

/**
 * After a conversation moved to another chat (a group that became a supergroup), its vectors
 * follow it into the new chat's scope, as its events did. They are stored again, as new rows, not
 * updated: a replica's vectors of the new scope (src/recall/vector-search.ts) read only rows added
 * after those it holds.
 */
export async function followMovedConversation(
  db: Kysely<Database>,
  conversation: string,
): Promise<void> {
  const scope = scopeKeyOf(conversation);
  await db.transaction().execute(async (trx) => {
    await inIdOrder(trx);
    const events = trx.selectFrom("messages").select("id").where("chat_id", "=", conversation);
    await trx
      .insertInto("embeddings")
      .columns(["message_id", "scope", "chunk", "model", "embedding"])
      .expression(
        trx
          .selectFrom("embeddings")
          .select([
            "message_id",
            sql<string>`cast(${scope} as text)`.as("scope"),
            "chunk",
            "model",
            "embedding",
          ])
          .where("message_id", "in", events)
          .where("scope", "<>", scope)
          .orderBy("id"),
      )
      .execute();
    await trx
      .deleteFrom("embeddings")
      .where("message_id", "in", events)
      .where("scope", "<>", scope)
      .execute();
  });
}
