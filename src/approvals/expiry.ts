import { type PeriodicJob, type QueueingOptions, startQueueing } from "../queue/periodic.js";
import type { Approvals } from "./approvals.js";

/**
 * Ends the requests nobody answered in APPROVAL_TIMEOUT, as denials, and queues their turns to go
 * on. Every replica may run it: a request expires once, in the database.
 */
export function startApprovalExpiry(
  deps: QueueingOptions & {
    approvals: Pick<Approvals, "expireDue">;
  },
): PeriodicJob {
  const now = deps.now ?? Date.now;
  return startQueueing({
    ...deps,
    queue: async () => {
      const expired = await deps.approvals.expireDue(now());
      return expired.length > 0
        ? {
            log: { approvals: expired.map((a) => a.id) },
            conversations: expired.map((a) => a.conversation),
          }
        : undefined;
    },
    messages: {
      queued: "tool approvals expired unanswered",
      failed: "could not expire tool approvals; trying again soon",
    },
  });
}
