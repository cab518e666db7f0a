import { type PeriodicJob, type QueueingOptions, startQueueing } from "../queue/periodic.js";
import type { TaskStore } from "./store.js";

/**
 * Turns due task runs into inbox items, at start-up (runs missed while the service was down)
 * and then every `intervalMs`; the dispatcher runs them like any update, in order with their
 * chat's messages. Every replica may do this: queueing a run is once-only in the database.
 */
export function startScheduler(
  deps: QueueingOptions & {
    tasks: Pick<TaskStore, "queueDue">;
  },
): PeriodicJob {
  const now = deps.now ?? Date.now;
  return startQueueing({
    ...deps,
    queue: async () => {
      const runs = await deps.tasks.queueDue(now());
      return runs > 0 ? { runs } : undefined;
    },
    messages: {
      queued: "queued due scheduled tasks",
      failed: "could not queue due scheduled tasks; trying again soon",
    },
  });
}
