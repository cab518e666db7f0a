import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import { enqueueContinuation } from "./continuation.js";
import { createApprovalGate } from "./gate.js";
import type { PolicyOf } from "./policy.js";
import { type Approval, createApprovalStore, type Decision } from "./store.js";

export type Approvals = ReturnType<typeof createApprovals>;

/**
 * The approvals of tool calls: the gate the turn asks, and the ways a waiting call ends (an
 * answer, its time running out, a stop). Each ending is stored together with the inbox row of
 * the turn that goes on, in one transaction: a crash between the two cannot leave a turn that
 * never resumes.
 */
export function createApprovals(deps: {
  db: Kysely<Database>;
  policyOf: PolicyOf;
  timeoutMs: number;
  logger: Logger;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  const store = createApprovalStore(deps.db, now);
  const inTransaction = <T>(
    work: (trx: ReturnType<typeof createApprovalStore>, db: Kysely<Database>) => Promise<T>,
  ) => deps.db.transaction().execute((trx) => work(createApprovalStore(trx, now), trx));
  /**
   * Ends requests for a stop or a new message. One turn goes on for them all: its run shows each
   * request's ending (src/answer/approval-run.ts) and finds their calls answered, or ends them.
   */
  const endTogether = (end: (trx: ReturnType<typeof createApprovalStore>) => Promise<Approval[]>) =>
    inTransaction(async (trx, db) => {
      const ended = await end(trx);
      const first = ended[0];
      if (first) await enqueueContinuation(db, first, now);
      return ended;
    });
  const gate = createApprovalGate({
    ...deps,
    store,
    now,
    supersede: (conversation) => endTogether((trx) => trx.supersede(conversation)),
  });

  return {
    store,
    gate,
    policyOf: deps.policyOf,
    timeoutMs: deps.timeoutMs,
    /** The user's answer; undefined when the request no longer waits (answered, expired). */
    answer: (id: number, decision: Decision, by: number): Promise<Approval | undefined> =>
      inTransaction(async (trx, db) => {
        const approval = await trx.decide(id, decision, by);
        if (!approval) return undefined;
        if (decision === "always") await trx.grant(approval.scope, approval.tool, by);
        await enqueueContinuation(db, approval, now);
        return approval;
      }),
    /** Requests whose time ran out, now denied, their turns queued. */
    expireDue: (at: number): Promise<Approval[]> =>
      inTransaction(async (trx, db) => {
        const expired = await trx.expireDue(at);
        for (const approval of expired) await enqueueContinuation(db, approval, now);
        return expired;
      }),
    /** A stop: the conversation's waiting calls are cancelled, and its turn ends as stopped. */
    cancel: (conversation: string): Promise<Approval[]> =>
      endTogether((trx) => trx.cancel(conversation)),
  };
}
