import { type Kysely, sql } from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import { prepareQuery } from "../db/prepared.js";
import type { Database } from "../db/schema.js";

/**
 * Written out, not bound: the partial indexes of the migration serve only queries whose predicate
 * visibly implies theirs.
 */
const unfinished = (alias: "u" | "o") =>
  sql<boolean>`${sql.ref(`${alias}.status`)} in ('pending', 'running')`;

export type InboxItem = {
  updateId: number;
  chatId: string | null;
  update: unknown;
  attempts: number;
};

export type Inbox = ReturnType<typeof createInbox>;

/**
 * The durable queue between Telegram and the agent. An update is stored (once, by update_id)
 * before Telegram gets its 200; workers claim the oldest unfinished update of a chat with a
 * lease, so one chat runs in order while other chats run alongside, on one process or many.
 */
export function createInbox(deps: {
  db: Kysely<Database>;
  kind: DatabaseKind;
  workerId: string;
  leaseMs: number;
  now?: () => number;
}) {
  const { db, workerId, leaseMs } = deps;
  const now = deps.now ?? Date.now;

  const insert = prepareQuery(
    db,
    4,
    (updateId: number, chatId: string | null, json: string, receivedAt: string) =>
      db
        .insertInto("inbox")
        .values({
          update_id: updateId,
          chat_id: chatId,
          update_json: json,
          status: "pending",
          received_at: receivedAt,
        })
        .onConflict((oc) => oc.column("update_id").doNothing())
        .returning("update_id"),
  );

  /** Stores an update; false when this update_id was already stored (a retry or an overlap). */
  async function add(updateId: number, chatId: string | null, update: unknown): Promise<boolean> {
    const { rows } = await insert([
      updateId,
      chatId,
      JSON.stringify(update),
      new Date(now()).toISOString(),
    ]);
    return rows.length > 0;
  }

  /**
   * Claims in one statement: the UPDATE picks its row with a subquery, so no gap between them.
   * On PostgreSQL, replicas claim at the same time: the subquery locks the row it picks and skips
   * rows another replica is claiming. Two replicas therefore never take the same update, and
   * never two of one chat: both see the chat's oldest unfinished update first, one locks it, and
   * for the other that update still counts as unfinished and holds back the rest of the chat. A
   * row claimed and committed after a replica's snapshot is re-checked once locked (its fresh
   * lease no longer qualifies).
   */
  const claimUpdate = prepareQuery(db, 2, (at: number, leaseUntil: number) =>
    db
      .updateTable("inbox")
      .set((eb) => ({
        status: "running",
        claimed_by: workerId,
        lease_until: leaseUntil,
        attempts: eb("attempts", "+", 1),
      }))
      .where("update_id", "=", (eb) =>
        // The first unfinished update of its chat, and free: no lease, or an expired one (its
        // replica died, or its retry delay is over). A leased update blocks the rest of its chat.
        eb
          .selectFrom("inbox as u")
          .select("u.update_id")
          .where(unfinished("u"))
          .where((w) => w.or([w("u.lease_until", "is", null), w("u.lease_until", "<", at)]))
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("inbox as o")
                  .select("o.update_id")
                  .whereRef("o.chat_id", "=", "u.chat_id")
                  .where(unfinished("o"))
                  .whereRef("o.update_id", "<", "u.update_id"),
              ),
            ),
          )
          .orderBy("u.update_id")
          .limit(1)
          .$if(deps.kind === "postgres", (q) => q.forUpdate().skipLocked()),
      )
      .returning(["update_id", "chat_id", "update_json", "attempts"]),
  );

  /** Takes the next update that may run now, or undefined when there is none. */
  async function claim(): Promise<InboxItem | undefined> {
    const at = now();
    const [row] = (await claimUpdate([at, at + leaseMs])).rows;
    if (!row) return undefined;
    return {
      updateId: row.update_id,
      chatId: row.chat_id,
      update: JSON.parse(row.update_json),
      attempts: row.attempts,
    };
  }

  /** Extends the lease of an update this worker still runs; false if it lost it. */
  async function renew(updateId: number): Promise<boolean> {
    const result = await db
      .updateTable("inbox")
      .set({ lease_until: now() + leaseMs })
      .where("update_id", "=", updateId)
      .where("claimed_by", "=", workerId)
      .where("status", "=", "running")
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  const markFinished = prepareQuery(
    db,
    4,
    (updateId: number, status: "done" | "failed", error: string | null, finishedAt: string) =>
      db
        .updateTable("inbox")
        .set({ status, error, lease_until: null, finished_at: finishedAt })
        .where("update_id", "=", updateId),
  );

  async function finish(updateId: number, outcome: { error?: string } = {}): Promise<void> {
    await markFinished([
      updateId,
      outcome.error ? "failed" : "done",
      outcome.error ?? null,
      new Date(now()).toISOString(),
    ]);
  }

  /** Gives an update back to the queue (an infrastructure error); it runs again after `delayMs`. */
  async function release(updateId: number, error: string, delayMs: number): Promise<void> {
    await db
      .updateTable("inbox")
      .set({ status: "pending", lease_until: now() + delayMs, claimed_by: null, error })
      .where("update_id", "=", updateId)
      .execute();
  }

  /**
   * SQLite has one process by construction: whatever it was running when it died can run again
   * at once instead of waiting for the lease to expire.
   */
  async function recoverAfterCrash(): Promise<number> {
    if (deps.kind !== "sqlite") return 0;
    const result = await db
      .updateTable("inbox")
      .set({ status: "pending", lease_until: null, claimed_by: null })
      .where("status", "=", "running")
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * Deletes finished updates older than `before` (an ISO time), in batches so that no single
   * statement holds the write lock for long. Returns how many rows went.
   */
  async function prune(before: string, batchSize = 1_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await db
        .deleteFrom("inbox")
        .where("update_id", "in", (eb) =>
          eb
            .selectFrom("inbox as f")
            .select("f.update_id")
            .where("f.status", "in", ["done", "failed"])
            .where("f.finished_at", "<", before)
            .limit(batchSize),
        )
        .executeTakeFirst();
      const count = Number(result.numDeletedRows);
      deleted += count;
      if (count < batchSize) return deleted;
    }
  }

  return { add, claim, renew, finish, release, recoverAfterCrash, prune };
}
