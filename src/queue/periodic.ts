import type { Logger } from "../logger.js";

export type PeriodicJob = {
  /** Runs the job now (or joins a run already in progress). */
  run(): Promise<void>;
  /**
   * A run that starts after this call: now, or right after the run in progress, which may have
   * looked before what the caller just changed. Calls meanwhile share that one further run.
   */
  runAfter(): Promise<void>;
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>;
};

/**
 * Runs `job` at once and then every `intervalMs`, never two runs at a time. The job handles its
 * own failures (it is housekeeping that must never stop the service). The timer does not keep
 * the process alive.
 */
export function startPeriodic(job: () => Promise<void>, intervalMs: number): PeriodicJob {
  let running: Promise<void> | undefined;
  let again: Promise<void> | undefined;
  let stopped = false;
  function run(): Promise<void> {
    running ??= job().finally(() => {
      running = undefined;
    });
    return running;
  }
  function runAfter(): Promise<void> {
    if (!running) return run();
    again ??= running.then(() => {
      again = undefined;
      return stopped ? undefined : run();
    });
    return again;
  }
  void run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    run,
    runAfter,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await again;
      await running;
    },
  };
}

/**
 * Every `intervalMs` (and at once), puts what is due into the inbox: `queue` returns the log
 * fields and the conversations of what it queued, or undefined when nothing was due. The
 * dispatcher is told at once; a failure is logged and tried again at the next tick.
 */
/** How a job that queues work into the inbox runs. */
export type QueueingOptions = {
  intervalMs: number;
  logger: Logger;
  /** Told the conversations of what was queued, so that the dispatcher looks at once. */
  onQueued(conversations: readonly string[]): void;
  /** The clock due times are read by (the database's, with replicas). */
  now?: () => number;
};

export function startQueueing(
  deps: QueueingOptions & {
    /** What it queued: the fields of its log line, and the conversation of each item. */
    queue(): Promise<
      { log: Record<string, unknown>; conversations: readonly string[] } | undefined
    >;
    /** The log line for what was queued, and for a failure. */
    messages: { queued: string; failed: string };
  },
): PeriodicJob {
  return startPeriodic(async () => {
    try {
      const queued = await deps.queue();
      if (queued) {
        deps.logger.info(queued.log, deps.messages.queued);
        deps.onQueued(queued.conversations);
      }
    } catch (error) {
      deps.logger.warn({ err: error }, deps.messages.failed);
    }
  }, deps.intervalMs);
}
