import { type Kysely, PostgresAdapter, sql } from "kysely";
import type { Database } from "../db/schema.js";
import { isEmbedded } from "../session/event-text.js";

/** Events taken into the queue at a time, in id order (the backfill's step). */
const INTAKE = 2_000;

/**
 * A vector as PostgreSQL's literal of a `real[]`. Given the numbers, pg writes the same literal
 * with each element quoted and escaped by two regular expressions: 114 KB of garbage a turn
 * (docs/decisions/0011-cpu-per-turn.md).
 */
export const realArrayLiteral = (values: Float32Array): string => `{${values.join(",")}}`;

export type ClaimedItem = { messageId: number; attempts: number };

/** Names the advisory lock under which vectors are stored on PostgreSQL (see inIdOrder). */
export const EMBEDDINGS_LOCK_KEY = 4_216_711_533_033;

/**
 * Makes the vectors a transaction stores commit in the order of their ids. A replica's cache of a
 * scope's vectors (src/recall/vector-search.ts) reads only the rows with ids above those it
 * holds; a sequence hands ids out at insert time, so without this two replicas storing at once
 * could commit a lower id after a search read a higher one, and that vector would never be read.
 * SQLite commits one writer at a time.
 */
export async function inIdOrder(trx: Kysely<Database>): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`select pg_advisory_xact_lock(${EMBEDDINGS_LOCK_KEY})`.execute(trx);
}

/**
 * The durable queue of events to embed. Events enter it in id order from a cursor over
 * `messages`, which takes in the history stored before recall by meaning too; a worker claims a
 * batch with a lease (like the inbox: a claim that ran out is claimed again, so a replica that
 * died loses nothing) and removes what it embedded in the transaction that stores the vectors.
 */
export function createEmbeddingQueue(deps: {
  db: Kysely<Database>;
  /** This process, in `claimed_by`. */
  worker: string;
  leaseMs: number;
}) {
  const { db } = deps;
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  return {
    /**
     * Makes `model` the one recall compares against. Vectors another model made (before
     * GEMINI_EMBEDDING_MODEL was changed) cannot be set against this model's queries: their
     * events are queued again, unless this model embedded them already, and the vectors deleted.
     * Read from the cursor's row, locked, so replicas starting together do it once. Returns how
     * many vectors were deleted.
     */
    async adoptModel(model: string): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const cursor = trx
          .selectFrom("embedding_progress")
          .select("model")
          .where("name", "=", "cursor");
        const { model: adopted } = await (postgres
          ? cursor.forUpdate()
          : cursor
        ).executeTakeFirstOrThrow();
        if (adopted === model) return 0;
        const other = trx.selectFrom("embeddings").select("message_id").where("model", "<>", model);
        await trx
          .insertInto("embedding_queue")
          .columns(["message_id"])
          .expression(
            other
              .distinct()
              .where(
                "message_id",
                "not in",
                trx.selectFrom("embeddings").select("message_id").where("model", "=", model),
              ),
          )
          .onConflict((oc) => oc.column("message_id").doNothing())
          .execute();
        const deleted = await trx
          .deleteFrom("embeddings")
          .where("model", "<>", model)
          .executeTakeFirst();
        await trx
          .updateTable("embedding_progress")
          .set({ model })
          .where("name", "=", "cursor")
          .execute();
        return Number(deleted.numDeletedRows);
      });
    },

    /**
     * Takes the next events after the cursor into the queue: what recall can find (a person's
     * message, a model's answer, a summary) with text and not forgotten. Returns how many it
     * looked at; 0 when the queue has taken in everything.
     */
    async intake(): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const cursor = postgres
          ? await trx
              .selectFrom("embedding_progress")
              .select("last_id")
              .where("name", "=", "cursor")
              .forUpdate()
              .executeTakeFirstOrThrow()
          : await trx
              .selectFrom("embedding_progress")
              .select("last_id")
              .where("name", "=", "cursor")
              .executeTakeFirstOrThrow();
        const rows = await trx
          .selectFrom("messages")
          .select(["id", "kind", "role", "is_user_message", "search_text", "forgotten_at"])
          .where("id", ">", cursor.last_id)
          .orderBy("id")
          .limit(INTAKE)
          .execute();
        const last = rows.at(-1);
        if (!last) return 0;
        const worth = rows.filter(isEmbedded);
        for (let i = 0; i < worth.length; i += 500) {
          await trx
            .insertInto("embedding_queue")
            .values(worth.slice(i, i + 500).map((r) => ({ message_id: r.id })))
            .onConflict((oc) => oc.column("message_id").doNothing())
            .execute();
        }
        await trx
          .updateTable("embedding_progress")
          .set({ last_id: last.id })
          .where("name", "=", "cursor")
          .execute();
        return rows.length;
      });
    },

    /**
     * Claims up to `limit` items nobody holds, oldest first, at `at` (ms since the epoch): the
     * time leases are compared by, the database server's where replicas share one (src/db/clock.ts).
     */
    async claim(limit: number, at: number): Promise<ClaimedItem[]> {
      const skipLocked = postgres ? sql`for update skip locked` : sql``;
      const { rows } = await sql<{ message_id: number; attempts: number }>`
        update embedding_queue
        set claimed_by = ${deps.worker}, lease_until = ${at + deps.leaseMs}, attempts = attempts + 1
        where message_id in (
          select message_id from embedding_queue
          where lease_until is null or lease_until < ${at}
          order by message_id
          limit ${limit}
          ${skipLocked}
        )
        returning message_id, attempts`.execute(db);
      return rows
        .map((r) => ({ messageId: Number(r.message_id), attempts: Number(r.attempts) }))
        .sort((a, b) => a.messageId - b.messageId);
    },

    /**
     * Stores the vectors of items this worker still holds and removes them from the queue, in
     * one transaction; an item whose lease passed to another worker is left to that one.
     */
    async complete(
      vectors: ReadonlyMap<number, Array<{ scope: string; model: string; values: Float32Array }>>,
      done: readonly number[],
    ): Promise<number> {
      if (done.length === 0) return 0;
      return db.transaction().execute(async (trx) => {
        const held = await trx
          .deleteFrom("embedding_queue")
          .where("message_id", "in", [...done])
          .where("claimed_by", "=", deps.worker)
          .returning("message_id")
          .execute();
        const rows = held.flatMap(({ message_id: id }) =>
          (vectors.get(Number(id)) ?? []).map((v, chunk) => ({
            message_id: Number(id),
            scope: v.scope,
            chunk,
            model: v.model,
            embedding: postgres
              ? realArrayLiteral(v.values)
              : Buffer.from(v.values.buffer, v.values.byteOffset, v.values.byteLength),
          })),
        );
        if (rows.length > 0) await inIdOrder(trx);
        for (let i = 0; i < rows.length; i += 200) {
          await trx
            .insertInto("embeddings")
            .values(rows.slice(i, i + 200))
            .execute();
        }
        return held.length;
      });
    },

    /**
     * Gives claimed items back untried, for a claim at once, the attempt counted by their claim
     * taken back: a shutdown cut their batch short, which says nothing of the items.
     */
    async putBack(ids: readonly number[]): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable("embedding_queue")
        .set((eb) => ({ claimed_by: null, lease_until: null, attempts: eb("attempts", "-", 1) }))
        .where("message_id", "in", [...ids])
        .where("claimed_by", "=", deps.worker)
        .execute();
    },

    /**
     * Gives claimed items back, to be claimed again from `retryAt` (by the clock claims use); those
     * tried `maxAttempts` times are dropped.
     */
    async release(ids: readonly number[], retryAt: number, maxAttempts: number): Promise<number> {
      if (ids.length === 0) return 0;
      const dropped = await db
        .deleteFrom("embedding_queue")
        .where("message_id", "in", [...ids])
        .where("claimed_by", "=", deps.worker)
        .where("attempts", ">=", maxAttempts)
        .executeTakeFirst();
      await db
        .updateTable("embedding_queue")
        .set({ claimed_by: null, lease_until: retryAt })
        .where("message_id", "in", [...ids])
        .where("claimed_by", "=", deps.worker)
        .execute();
      return Number(dropped.numDeletedRows);
    },

    /** Events still to embed: in the queue, and in `messages` past the cursor. */
    async backlog(): Promise<number> {
      const queued = await db
        .selectFrom("embedding_queue")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      const ahead = await db
        .selectFrom("messages")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where(
          "id",
          ">",
          db.selectFrom("embedding_progress").select("last_id").where("name", "=", "cursor"),
        )
        .executeTakeFirstOrThrow();
      return Number(queued.n) + Number(ahead.n);
    },
  };
}

export type EmbeddingQueue = ReturnType<typeof createEmbeddingQueue>;
