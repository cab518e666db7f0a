import type { Logger } from "../logger.js";
import { type PeriodicJob, startPeriodic } from "../queue/periodic.js";
import type { TaskStore } from "./store.js";

/**
 * Turns due task runs into inbox items, at start-up (runs missed while the service was down)
 * and then every `intervalMs`; the dispatcher runs them like any update, in order with their
 * chat's messages. Every replica may do this: queueing a run is once-only in the database.
 */
export function startScheduler(deps: {
  tasks: Pick<TaskStore, "queueDue">;
  intervalMs: number;
  logger: Logger;
  /** Told when runs were queued, so that the dispatcher looks at once. */
  onQueued(): void;
  now?: () => number;
}): PeriodicJob {
  const now = deps.now ?? Date.now;
  return startPeriodic(async () => {
    try {
      const queued = await deps.tasks.queueDue(now());
      if (queued > 0) {
        deps.logger.info({ runs: queued }, "queued due scheduled tasks");
        deps.onQueued();
      }
    } catch (error) {
      deps.logger.warn({ err: error }, "could not queue due scheduled tasks; trying again soon");
    }
  }, deps.intervalMs);
}
