export type PeriodicJob = {
  /** Runs the job now (or joins a run already in progress). */
  run(): Promise<void>;
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
  function run(): Promise<void> {
    running ??= job().finally(() => {
      running = undefined;
    });
    return running;
  }
  void run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    run,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
