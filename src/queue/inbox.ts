import {
  type CompiledQuery,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type QueryResult,
  type SqlBool,
  sql,
  type Updateable,
  type UpdateQueryBuilder,
  type UpdateResult,
} from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import { precompiled } from "../db/precompiled.js";
import type { Database, InboxTable } from "../db/schema.js";

/**
 * Written out, not bound: the partial indexes of the migration serve only queries whose predicate
 * visibly implies theirs.
 */
const unfinished = (alias?: "u" | "o" | "g") =>
  sql<boolean>`${sql.ref(alias ? `${alias}.status` : "status")} in ('pending', 'running')`;

export type InboxItem = {
  updateId: number;
  chatId: string | null;
  update: unknown;
  /** Claims so far, this one included: it tells this claim from a later one by another worker. */
  attempts: number;
  /** When the lease of this claim ends, by the inbox's clock (the database server's, on PostgreSQL). */
  leaseUntil: number;
  /** Messages of the answer that earlier runs got to Telegram (all but the last, at most). */
  delivered: number;
  /** Messages earlier runs showed the answer in while it was written (edit mode), in order. */
  liveMessages: readonly number[];
  /** Files tools sent in earlier runs (what the caller recorded: see Lease.recordToolFiles). */
  toolFiles: readonly unknown[];
};

/** What fences a worker's writes to an update: its claim, told apart from any later one. */
export type Claim = Pick<InboxItem, "updateId" | "attempts">;

/**
 * How long an album must have been quiet (no item of it arriving) before its turn starts.
 * Telegram makes an album's messages at once and sends them as separate updates right after each
 * other — in one getUpdates batch, or as webhook requests that may reach different replicas, in
 * any order — so a second covers their spread with room to spare, and costs a user who sent an
 * album a second on an answer that takes the model several. An item later than that (a webhook
 * delivery Telegram had to retry) runs as a turn of its own.
 */
export const ALBUM_SETTLE_MS = 1_000;

/** Thrown where a run would write or send after its update's lease went to another worker. */
export class LeaseLostError extends Error {
  constructor(updateId: number) {
    super(
      `The lease of update ${updateId} expired and another worker has claimed it, so this run stops: the other worker answers it.`,
    );
  }
}

/**
 * The right to run one claimed update, for as long as its lease is renewed in time, and the
 * record of how far its answer got.
 */
export type Lease = {
  /** Extends the lease; after a renewal finds the claim gone, `lost` is true. */
  renew(): Promise<void>;
  /**
   * Resolves when the claim is this worker's for a while yet, without asking the database as long
   * as renewals come in time; throws LeaseLostError when another worker may run the update now.
   */
  ensureHeld(): Promise<void>;
  /** Time left until the lease ends, as far as this worker knows (after its last renewal). */
  remainingMs(): number;
  /** Messages of the answer that earlier runs of this update got to Telegram. */
  readonly delivered: number;
  /**
   * Records that the answer's first `count` messages reached Telegram, so that a later run sends
   * only the rest; throws LeaseLostError when the update is no longer this worker's. `rows` are
   * what deliveredStatement(count) changed when the courier already ran it (nothing left to do,
   * or 0: the claim was lost).
   */
  recordDelivered(count: number, rows?: number): Promise<void>;
  /** The statement recordDelivered(count) runs, for the courier to run the moment Telegram accepts. */
  deliveredStatement(count: number): CompiledQuery;
  /** Messages earlier runs of this update showed its answer in while it was written. */
  readonly liveMessages: readonly number[];
  /**
   * Records the messages the answer is being shown in (all of them, in order), so that a later
   * run edits them rather than sending the answer anew; throws LeaseLostError when the update is
   * no longer this worker's. `rows`: as recordDelivered's, for liveMessagesStatement.
   */
  recordLiveMessages(ids: readonly number[], rows?: number): Promise<void>;
  /**
   * What recordLiveMessages runs, for the courier: `ids` with null for the message being sent,
   * whose id the courier puts in place (as JSON, into parameter `sentIds.parameter`).
   */
  liveMessagesStatement(ids: readonly (number | null)[]): LiveMessagesStatement;
  /** Files tools sent in earlier runs of this update, as recordToolFiles was given them. */
  readonly toolFiles: readonly unknown[];
  /**
   * Records the files tools sent in this update (all of them, in order; each as JSON), so that a
   * run after a crash knows which calls got their file to Telegram; throws LeaseLostError when
   * the update is no longer this worker's. `rows`: as recordDelivered's, for toolFilesStatement.
   */
  recordToolFiles(files: readonly unknown[], rows?: number): Promise<void>;
  /** What recordToolFiles(files) runs, for the courier to run the moment Telegram accepts. */
  toolFilesStatement(files: readonly unknown[]): CompiledQuery;
  /**
   * The updates of this update's album (`mediaGroupId`) that its turn answers, this one included,
   * oldest first. The first call takes in the album's other items that are still waiting and
   * marks them done, merged into this update; every later call (a run after a crash) returns the
   * same ones. Throws LeaseLostError when the update is no longer this worker's.
   */
  takeAlbum(mediaGroupId: string): Promise<unknown[]>;
  readonly lost: boolean;
};

export type Inbox = ReturnType<typeof createInbox>;

/** A compiled statement one of whose parameters is the JSON list of an answer's messages. */
export type LiveMessagesStatement = Pick<CompiledQuery, "sql" | "parameters"> & {
  sentIds: { parameter: number; ids: readonly (number | null)[] };
};

/** Stands for the list of messages while the statement is compiled, to find its parameter. */
const LIVE_MESSAGES_SLOT = "\u0000live messages\u0000";

/** What a stop is for: a conversation's answer (/stop), or a draft's (its stop button). */
export type StopTarget = { conversation: string } | { chatId: number; draftId: number };

/** The stored message ids; anything but a JSON array of integers (a hand-edited row) is none. */
function parseLiveMessages(json: string | null): number[] {
  if (json === null) return [];
  try {
    const ids: unknown = JSON.parse(json);
    return Array.isArray(ids) && ids.every(Number.isSafeInteger) ? (ids as number[]) : [];
  } catch {
    return [];
  }
}

/**
 * The update_id of probeWrite's row: below every Telegram update_id (they are positive) and every
 * scheduled run's (from -2^52 up, src/tasks/store.ts).
 */
const PROBE_UPDATE_ID = Number.MIN_SAFE_INTEGER;

/** The stored files of tools; anything but a JSON array (a hand-edited row) is none. */
function parseToolFiles(json: string | null): unknown[] {
  if (json === null) return [];
  try {
    const files: unknown = JSON.parse(json);
    return Array.isArray(files) ? files : [];
  } catch {
    return [];
  }
}

/** Leases one renewal statement extends at most: a bounded list of parameters. */
const RENEW_BATCH = 500;

type InboxUpdate = UpdateQueryBuilder<Database, "inbox", "inbox", UpdateResult>;

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
  /** See ALBUM_SETTLE_MS. */
  albumSettleMs?: number;
  /** A renewal found a stop another replica recorded for this running update (requestStop). */
  onStopRequested?(updateId: number): void;
  /**
   * Takes secrets out of the errors kept in `inbox.error` (a Telegram error may echo the bot
   * token): the logger's scrubber, so that a row never holds what a log line would not show.
   */
  scrub: (text: string) => string;
}) {
  const { db, workerId, leaseMs } = deps;
  const now = deps.now ?? Date.now;
  const albumSettleMs = deps.albumSettleMs ?? ALBUM_SETTLE_MS;
  const { scrub } = deps;

  // Every update is stored: compiled once (src/db/precompiled.ts).
  const insertUpdate = precompiled(
    db,
    (a: {
      updateId: number;
      chatId: string | null;
      json: string;
      receivedAt: string;
      mediaGroupId: string | null;
    }) =>
      db
        .insertInto("inbox")
        .values({
          update_id: a.updateId,
          chat_id: a.chatId,
          update_json: a.json,
          status: "pending",
          received_at: a.receivedAt,
          media_group_id: a.mediaGroupId,
        })
        .onConflict((oc) => oc.column("update_id").doNothing())
        .returning("update_id"),
  );

  /**
   * Stores an update; false when this update_id was already stored (a retry or an overlap). The
   * updates of one album (`mediaGroupId`, within the chat) wait until it has been quiet for
   * `albumSettleMs`, then run as one (see Lease.takeAlbum).
   */
  async function add(
    updateId: number,
    chatId: string | null,
    update: unknown,
    mediaGroupId?: string,
  ): Promise<boolean> {
    const { rows } = await insertUpdate.run({
      updateId,
      chatId,
      json: JSON.stringify(update),
      receivedAt: new Date(now()).toISOString(),
      mediaGroupId: mediaGroupId ?? null,
    });
    return rows.length > 0;
  }

  /**
   * Claims in one statement: the UPDATE picks its rows with a subquery, so no gap between them.
   * Only a chat's oldest unfinished update qualifies, so one claim takes at most one per chat.
   * On PostgreSQL, replicas claim at the same time: the subquery locks the rows it picks and skips
   * rows another replica is claiming. Two replicas therefore never take the same update, and
   * never two of one chat: both see the chat's oldest unfinished update first, one locks it, and
   * for the other that update still counts as unfinished and holds back the rest of the chat. A
   * row claimed and committed after a replica's snapshot is re-checked once locked (its fresh
   * lease no longer qualifies). An album's item waits until no item of its album arrived after
   * `settledBefore`, holding back the rest of its chat meanwhile, like any older update.
   */
  const claimUpdates = (at: number, leaseUntil: number, settledBefore: string, limit: number) =>
    db
      .updateTable("inbox")
      .set((eb) => ({
        status: "running",
        claimed_by: workerId,
        lease_until: leaseUntil,
        attempts: eb("attempts", "+", 1),
      }))
      .where("update_id", "in", (eb) =>
        // The first unfinished update of its chat, and free: no lease, or an expired one (its
        // replica died, or its retry delay is over). A leased update blocks the rest of its chat,
        // and so does one running under a live lease even if it is newer: Telegram may deliver
        // an older update late, which must wait rather than run beside it.
        eb
          .selectFrom("inbox as u")
          .select("u.update_id")
          .where(unfinished("u"))
          .where((w) => w.or([w("u.lease_until", "is", null), w("u.lease_until", "<", at)]))
          .where((w) =>
            w.or([
              w("u.media_group_id", "is", null),
              w.not(
                w.exists(
                  w
                    .selectFrom("inbox as g")
                    .select("g.update_id")
                    .whereRef("g.chat_id", "=", "u.chat_id")
                    .whereRef("g.media_group_id", "=", "u.media_group_id")
                    .where(unfinished("g"))
                    .where("g.received_at", ">", settledBefore),
                ),
              ),
            ]),
          )
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("inbox as o")
                  .select("o.update_id")
                  .whereRef("o.chat_id", "=", "u.chat_id")
                  .where(unfinished("o"))
                  .where((w) =>
                    w.or([
                      w("o.update_id", "<", w.ref("u.update_id")),
                      w.and([w("o.status", "=", "running"), w("o.lease_until", ">=", at)]),
                    ]),
                  ),
              ),
            ),
          )
          .orderBy("u.update_id")
          .limit(limit)
          .$if(deps.kind === "postgres", (q) => q.forUpdate().skipLocked()),
      )
      .returning([
        "update_id",
        "chat_id",
        "update_json",
        "attempts",
        "delivered",
        "live_messages",
        "tool_files",
      ]);

  /**
   * Takes up to `limit` updates that may run now, at most one per chat, oldest first; none when
   * there are none. One statement for many: finding what may run reads every unfinished update,
   * so a burst claimed one at a time would read its backlog once per update.
   */
  async function claimMany(limit: number): Promise<InboxItem[]> {
    const at = now();
    const leaseUntil = at + leaseMs;
    const settledBefore = new Date(at - albumSettleMs).toISOString();
    const rows = await claimUpdates(at, leaseUntil, settledBefore, limit).execute();
    // The UPDATE returns its rows in no particular order.
    rows.sort((a, b) => a.update_id - b.update_id);
    return rows.map((row) => ({
      updateId: row.update_id,
      chatId: row.chat_id,
      update: JSON.parse(row.update_json),
      attempts: row.attempts,
      leaseUntil,
      delivered: row.delivered,
      liveMessages: parseLiveMessages(row.live_messages),
      toolFiles: parseToolFiles(row.tool_files),
    }));
  }

  /** Takes the next update that may run now, or undefined when there is none. */
  async function claim(): Promise<InboxItem | undefined> {
    return (await claimMany(1))[0];
  }

  /**
   * The writes of a claim's holder apply only while the claim is still the update's latest: once
   * its lease expired and another worker (or this one) claimed the update again, they change
   * nothing, so a worker that stalled past its lease cannot undo the new holder's work.
   */
  const held = (query: InboxUpdate, claim: Claim): InboxUpdate =>
    query
      .where("update_id", "=", claim.updateId)
      .where("attempts", "=", claim.attempts)
      .where("claimed_by", "=", workerId)
      .where("status", "=", "running");

  /** Applies a holder's write to its claimed update; false when the claim was lost. */
  async function updateHeld(claim: Claim, values: Updateable<InboxTable>): Promise<boolean> {
    const result = await held(db.updateTable("inbox").set(values), claim).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Whether a holder's write found its claimed update (see held). */
  const changedHeld = (result: QueryResult<unknown>) => Number(result.numAffectedRows ?? 0) > 0;

  // The holder's writes every turn makes, compiled once (src/db/precompiled.ts).
  const deliveredHeld = precompiled(db, (a: Claim & { delivered: number }) =>
    held(db.updateTable("inbox").set({ delivered: a.delivered }), a),
  );
  const deliveredArgs = (claim: Claim, count: number) => ({
    updateId: claim.updateId,
    attempts: claim.attempts,
    delivered: count,
  });

  const finishHeld = precompiled(
    db,
    (a: Claim & { status: "done" | "failed"; error: string | null; finishedAt: string }) =>
      held(
        db.updateTable("inbox").set({
          status: a.status,
          error: a.error,
          lease_until: null,
          finished_at: a.finishedAt,
        }),
        a,
      ),
  );

  /**
   * Extends a claim's lease; returns its new end, or undefined when the claim was lost. A stop
   * another replica recorded on the update meanwhile is passed on (`onStopRequested`).
   */
  async function renew(claim: Claim): Promise<number | undefined> {
    const leaseUntil = now() + leaseMs;
    const row = await held(db.updateTable("inbox").set({ lease_until: leaseUntil }), claim)
      .returning("stop_requested")
      .executeTakeFirst();
    if (row === undefined) return undefined;
    if (row.stop_requested !== 0) deps.onStopRequested?.(claim.updateId);
    return leaseUntil;
  }

  /** The rows other workers run under a live lease that a stop's target names. */
  function runningOthers(
    target: StopTarget | { updateIds: readonly number[] },
  ): (w: ExpressionBuilder<Database, "inbox">) => Expression<SqlBool> {
    const named = (w: ExpressionBuilder<Database, "inbox">) => {
      if ("updateIds" in target) return w("update_id", "in", [...target.updateIds]);
      if ("conversation" in target) return w("chat_id", "=", target.conversation);
      return w.and([
        // A scheduled run's draft is named by its (negative) update id, negated.
        w("update_id", "in", [target.draftId, -target.draftId]),
        w.or([
          w("chat_id", "=", String(target.chatId)),
          w("chat_id", "like", `${target.chatId}:%`),
        ]),
      ]);
    };
    return (w) =>
      w.and([
        w("status", "=", "running"),
        w("lease_until", ">=", now()),
        w("claimed_by", "<>", workerId),
        named(w),
      ]);
  }

  /**
   * The updates a stop is for that other workers are running under a live lease, with each one's
   * worker and update, so that whoever stops can first be checked against whoever asked.
   */
  async function runningElsewhere(
    target: StopTarget,
  ): Promise<{ updateId: number; worker: string; update: unknown }[]> {
    const rows = await db
      .selectFrom("inbox")
      .select(["update_id", "claimed_by", "update_json"])
      .where(runningOthers(target))
      .execute();
    return rows.map((row) => ({
      updateId: row.update_id,
      worker: row.claimed_by ?? "",
      update: JSON.parse(row.update_json) as unknown,
    }));
  }

  /**
   * Records a stop on the updates it is for (a target, or updates runningElsewhere found) that
   * other workers are running under a live lease, for them to find at their next renewal; returns
   * them, with the worker running each. This worker's own are not marked: its own registry of
   * answers has them.
   */
  async function requestStop(
    target: StopTarget | { updateIds: readonly number[] },
  ): Promise<{ updateId: number; worker: string }[]> {
    if ("updateIds" in target && target.updateIds.length === 0) return [];
    const rows = await db
      .updateTable("inbox")
      .set({ stop_requested: 1 })
      .where(runningOthers(target))
      .returning(["update_id", "claimed_by"])
      .execute();
    return rows.map((row) => ({ updateId: row.update_id, worker: row.claimed_by ?? "" }));
  }

  /** Records how many messages of a claim's answer reached Telegram; false when the claim was lost. */
  async function recordDelivered(claim: Claim, count: number): Promise<boolean> {
    // Telegram has the message: until this commits, a crash means sending it again.
    return changedHeld(await deliveredHeld.run(deliveredArgs(claim, count)));
  }

  /** What recordDelivered runs, compiled, for a connection on another thread (the courier's). */
  function deliveredStatement(claim: Claim, count: number): CompiledQuery {
    return deliveredHeld.compile(deliveredArgs(claim, count));
  }

  /** Records the messages a claim's answer is shown in; false when the claim was lost. */
  function recordLiveMessages(claim: Claim, ids: readonly number[]): Promise<boolean> {
    const json = ids.length === 0 ? null : JSON.stringify(ids);
    return updateHeld(claim, { live_messages: json });
  }

  /** What recordLiveMessages runs, with the list to be completed by the courier (see Lease). */
  function liveMessagesStatement(
    claim: Claim,
    ids: readonly (number | null)[],
  ): LiveMessagesStatement {
    const compiled = held(
      db.updateTable("inbox").set({ live_messages: LIVE_MESSAGES_SLOT }),
      claim,
    ).compile();
    return {
      sql: compiled.sql,
      parameters: compiled.parameters,
      sentIds: { parameter: compiled.parameters.indexOf(LIVE_MESSAGES_SLOT), ids },
    };
  }

  const toolFilesJson = (files: readonly unknown[]) =>
    files.length === 0 ? null : JSON.stringify(files);

  /** Records the files tools sent in a claim's update; false when the claim was lost. */
  function recordToolFiles(claim: Claim, files: readonly unknown[]): Promise<boolean> {
    return updateHeld(claim, { tool_files: toolFilesJson(files) });
  }

  /** What recordToolFiles runs, compiled, for the courier's connection. */
  function toolFilesStatement(claim: Claim, files: readonly unknown[]): CompiledQuery {
    return held(db.updateTable("inbox").set({ tool_files: toolFilesJson(files) }), claim).compile();
  }

  /** Records how a claimed update ended; false when the claim was lost (another worker runs it). */
  async function finish(claim: Claim, outcome: { error?: string } = {}): Promise<boolean> {
    const result = await finishHeld.run({
      updateId: claim.updateId,
      attempts: claim.attempts,
      status: outcome.error === undefined ? "done" : "failed",
      error: outcome.error === undefined ? null : scrub(outcome.error),
      finishedAt: new Date(now()).toISOString(),
    });
    return changedHeld(result);
  }

  /**
   * Gives a claimed update back to the queue (an infrastructure error); it runs again after
   * `delayMs`. False when the claim was lost.
   */
  function release(claim: Claim, error: string, delayMs: number): Promise<boolean> {
    return updateHeld(claim, {
      status: "pending",
      lease_until: now() + delayMs,
      claimed_by: null,
      error: scrub(error),
    });
  }

  /**
   * The updates a claim's turn answers for its album, this one included, oldest first; undefined
   * when the claim was lost. The first call fixes them, in one transaction: the claimed update
   * names itself in `merged_into`, and the album's other waiting items are marked done, merged
   * into it. None of them is running: the claimed update holds back the rest of its chat.
   */
  async function takeAlbum(item: InboxItem, mediaGroupId: string): Promise<unknown[] | undefined> {
    return db.transaction().execute(async (trx) => {
      const before = await trx
        .selectFrom("inbox")
        .select("merged_into")
        .where("update_id", "=", item.updateId)
        .executeTakeFirst();
      const fenced = await held(
        trx.updateTable("inbox").set({ merged_into: item.updateId }),
        item,
      ).executeTakeFirst();
      if (Number(fenced.numUpdatedRows) === 0) return undefined;
      if (before?.merged_into === null) {
        await trx
          .updateTable("inbox")
          .set({
            status: "done",
            merged_into: item.updateId,
            lease_until: null,
            finished_at: new Date(now()).toISOString(),
          })
          .where("chat_id", "=", item.chatId)
          .where("media_group_id", "=", mediaGroupId)
          .where("update_id", "<>", item.updateId)
          .where(unfinished())
          // An item that took its album itself once (a run that stalled past its lease) stays.
          .where("merged_into", "is", null)
          .execute();
      }
      const rows = await trx
        .selectFrom("inbox")
        .select("update_json")
        .where("merged_into", "=", item.updateId)
        .orderBy("update_id")
        .execute();
      return rows.map((row) => JSON.parse(row.update_json) as unknown);
    });
  }

  /**
   * The lease of a claim. A run checks it before each model call, each write and its answer: half
   * the lease must be left, so what follows the check (a send to Telegram, say) ends before
   * another worker may claim the update, unless this process stalls that long. Renewals every
   * third of the lease keep more than that, so the check rarely needs the database.
   */
  /** How renewLeases reaches the state of each lease this inbox handed out. */
  const leaseStates = new WeakMap<
    Lease,
    { claim: Claim; renewed(until: number): void; lose(): void }
  >();

  /**
   * Renews many leases in one statement per RENEW_BATCH (a worker running a thousand turns would
   * otherwise write a thousand times per renewal period); what it finds is as renew() finds it:
   * a lease whose claim is gone is lost, a stop recorded for an update is passed on.
   */
  async function renewLeases(leases: Iterable<Lease>): Promise<void> {
    const states = [...leases].flatMap((lease) => {
      const state = leaseStates.get(lease);
      return state && !lease.lost ? [state] : [];
    });
    for (let i = 0; i < states.length; i += RENEW_BATCH) {
      const batch = states.slice(i, i + RENEW_BATCH);
      const leaseUntil = now() + leaseMs;
      const rows = await db
        .updateTable("inbox")
        .set({ lease_until: leaseUntil })
        .where(
          "update_id",
          "in",
          batch.map((state) => state.claim.updateId),
        )
        .where("claimed_by", "=", workerId)
        .where("status", "=", "running")
        .returning(["update_id", "attempts", "stop_requested"])
        .execute();
      const heldNow = new Map(rows.map((row) => [row.update_id, row]));
      for (const state of batch) {
        const row = heldNow.get(state.claim.updateId);
        // The same update claimed again by this worker is another claim: this one is over.
        if (row === undefined || row.attempts !== state.claim.attempts) {
          state.lose();
          continue;
        }
        state.renewed(leaseUntil);
        if (row.stop_requested !== 0) deps.onStopRequested?.(state.claim.updateId);
      }
    }
  }

  function leaseOf(item: InboxItem): Lease {
    let until = item.leaseUntil;
    let lost = false;
    const renewLease = async () => {
      if (lost) return;
      const renewed = await renew(item);
      if (renewed === undefined) lost = true;
      else until = Math.max(until, renewed);
    };
    /**
     * A record of the holder: `rows` are what the courier's run of it changed, else it runs here;
     * a record that changed nothing means the claim is lost.
     */
    const recordHeld = async (rows: number | undefined, run: () => Promise<boolean>) => {
      const recorded = rows === undefined ? await run() : rows > 0;
      if (!recorded) {
        lost = true;
        throw new LeaseLostError(item.updateId);
      }
    };
    const lease: Lease = {
      renew: renewLease,
      async ensureHeld() {
        if (!lost && now() + leaseMs / 2 < until) return;
        await renewLease();
        if (lost) throw new LeaseLostError(item.updateId);
      },
      remainingMs: () => until - now(),
      delivered: item.delivered,
      recordDelivered: (count, rows) => recordHeld(rows, () => recordDelivered(item, count)),
      deliveredStatement: (count) => deliveredStatement(item, count),
      liveMessages: item.liveMessages,
      liveMessagesStatement: (ids) => liveMessagesStatement(item, ids),
      recordLiveMessages: (ids, rows) => recordHeld(rows, () => recordLiveMessages(item, ids)),
      toolFiles: item.toolFiles,
      toolFilesStatement: (files) => toolFilesStatement(item, files),
      recordToolFiles: (files, rows) => recordHeld(rows, () => recordToolFiles(item, files)),
      async takeAlbum(mediaGroupId) {
        const updates = await takeAlbum(item, mediaGroupId);
        if (updates === undefined) {
          lost = true;
          throw new LeaseLostError(item.updateId);
        }
        return updates;
      },
      get lost() {
        return lost;
      },
    };
    leaseStates.set(lease, {
      claim: item,
      renewed: (renewedUntil) => {
        until = Math.max(until, renewedUntil);
      },
      lose: () => {
        lost = true;
      },
    });
    return lease;
  }

  /**
   * A SQLite database has one service process (src/db/service-lock.ts): whatever it was running
   * when it died can run again at once instead of waiting for the lease to expire.
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

  /**
   * Stores a row as add() does and deletes it in the same transaction, for /healthz: it fails
   * where the database answers reads but cannot store an update (a full disk, a read-only file).
   * Committed, not rolled back: SQLite writes nothing to disk for a transaction it rolls back.
   * Other workers never see the row, and its update_id is none that Telegram or a scheduled run
   * uses.
   */
  async function probeWrite(): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const at = new Date(now()).toISOString();
      await trx
        .insertInto("inbox")
        .values({
          update_id: PROBE_UPDATE_ID,
          chat_id: null,
          update_json: "{}",
          status: "done",
          received_at: at,
          finished_at: at,
        })
        .execute();
      await trx.deleteFrom("inbox").where("update_id", "=", PROBE_UPDATE_ID).execute();
    });
  }

  /** Unfinished updates (waiting or running) and the age of the oldest, for /metrics. */
  async function backlog(): Promise<{ pending: number; oldestPendingAgeSeconds: number }> {
    const row = await db
      .selectFrom("inbox as u")
      .select((eb) => [
        eb.fn.countAll<number>().as("pending"),
        eb.fn.min("u.received_at").as("oldest"),
      ])
      .where(unfinished("u"))
      .executeTakeFirstOrThrow();
    const oldest = row.oldest === null ? undefined : Date.parse(row.oldest);
    return {
      pending: Number(row.pending),
      oldestPendingAgeSeconds: oldest === undefined ? 0 : Math.max(0, (now() - oldest) / 1000),
    };
  }

  return {
    add,
    backlog,
    claim,
    claimMany,
    renewLeases,
    renew,
    requestStop,
    runningElsewhere,
    leaseOf,
    recordDelivered,
    finish,
    release,
    recoverAfterCrash,
    prune,
    probeWrite,
  };
}
