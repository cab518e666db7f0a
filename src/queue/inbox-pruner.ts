import type { Logger } from "../logger.js";
import type { Inbox } from "./inbox.js";
import { startPeriodic } from "./periodic.js";

export type InboxPruner = {
  /** Prunes now (or joins a prune already running). */
  prune(): Promise<void>;
  /** Stops the schedule and waits for a prune in progress. */
  stop(): Promise<void>;
};

/**
 * Deletes finished inbox rows once they are older than the retention, at start-up and then every
 * `intervalMs`. A failure is logged and retried at the next interval: pruning is housekeeping and
 * must never stop the service. Several replicas may prune at once; deleting is idempotent.
 */
export function startInboxPruner(deps: {
  inbox: Pick<Inbox, "prune">;
  retentionMs: number;
  intervalMs: number;
  logger: Logger;
  now?: () => number;
}): InboxPruner {
  const { inbox, retentionMs, logger } = deps;
  const now = deps.now ?? Date.now;
  const job = startPeriodic(async () => {
    const before = new Date(now() - retentionMs).toISOString();
    try {
      const deleted = await inbox.prune(before);
      if (deleted > 0) logger.info({ deleted, before }, "deleted finished inbox updates");
    } catch (error) {
      logger.warn({ err: error }, "could not prune the inbox; trying again at the next interval");
    }
  }, deps.intervalMs);
  return { prune: job.run, stop: job.stop };
}
