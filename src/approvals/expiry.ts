import type { Logger } from "../logger.js";
import { type PeriodicJob, startPeriodic } from "../queue/periodic.js";
import type { Approvals } from "./approvals.js";

/**
 * Ends the requests nobody answered in APPROVAL_TIMEOUT, as denials, and queues their turns to go
 * on. Every replica may run it: a request expires once, in the database.
 */
export function startApprovalExpiry(deps: {
  approvals: Pick<Approvals, "expireDue">;
  intervalMs: number;
  logger: Logger;
  /** Told when turns were queued, so that the dispatcher looks at once. */
  onQueued(): void;
  now?: () => number;
}): PeriodicJob {
  const now = deps.now ?? Date.now;
  return startPeriodic(async () => {
    try {
      const expired = await deps.approvals.expireDue(now());
      if (expired.length > 0) {
        deps.logger.info(
          { approvals: expired.map((a) => a.id) },
          "tool approvals expired unanswered",
        );
        deps.onQueued();
      }
    } catch (error) {
      deps.logger.warn({ err: error }, "could not expire tool approvals; trying again soon");
    }
  }, deps.intervalMs);
}
