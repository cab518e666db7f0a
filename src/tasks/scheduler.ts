import { type PeriodicJob, type QueueingOptions, startQueueing } from "../queue/periodic.js";
import type { TaskStore } from "./store.js";

export type Scheduler = PeriodicJob & {
  /**
   * A task was added whose first run is due at `at` (ms): one due before the next tick is queued
   * at its time, so that "now" does not wait for the tick. A later one the ticks find.
   */
  addedDueAt(at: number): void;
};

/**
 * Turns due task runs into inbox items, at start-up (runs missed while the service was down)
 * and then every `intervalMs`; the dispatcher runs them like any update, in order with their
 * chat's messages. Every replica may do this: queueing a run is once-only in the database.
 */
export function startScheduler(
  deps: QueueingOptions & {
    tasks: Pick<TaskStore, "queueDue">;
  },
): Scheduler {
  const now = deps.now ?? Date.now;
  const job = startQueueing({
    ...deps,
    queue: async () => {
      const conversations = await deps.tasks.queueDue(now());
      return conversations.length > 0
        ? { log: { runs: conversations.length }, conversations }
        : undefined;
    },
    messages: {
      queued: "queued due scheduled tasks",
      failed: "could not queue due scheduled tasks; trying again soon",
    },
  });
  const early = new Set<NodeJS.Timeout>();
  return {
    run: job.run,
    runAfter: job.runAfter,
    addedDueAt(at) {
      const wait = at - now();
      if (wait >= deps.intervalMs) return;
      const timer = setTimeout(
        () => {
          early.delete(timer);
          // The task may have been added while a look was under way that missed it.
          void job.runAfter();
        },
        Math.max(0, wait),
      );
      timer.unref();
      early.add(timer);
    },
    async stop() {
      for (const timer of early) clearTimeout(timer);
      early.clear();
      await job.stop();
    },
  };
}
