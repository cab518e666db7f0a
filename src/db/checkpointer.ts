import { Worker } from "node:worker_threads";
import { builtWorkerUrl } from "../threads/worker-url.js";
import type { CheckpointReport, CheckpointWorkerData } from "./checkpoint-worker.js";

/**
 * How often the checkpointer copies the WAL into the database: often enough to keep the WAL small,
 * seldom enough that its fsyncs do not compete with the service's writes.
 */
const CHECKPOINT_INTERVAL_MS = 200;

/**
 * What the main connection's own checkpoints wait for instead of SQLite's default 1,000 pages: a
 * fallback for when the checkpointer is gone or behind, which keeps the WAL within about 40 MB.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

export type Checkpointer = { stop(): Promise<void> };

const FALLBACK = `checkpoints now run inside commits, every ${FALLBACK_AUTOCHECKPOINT_PAGES} pages, until the service restarts`;

/**
 * Runs SQLite's WAL checkpoints on a thread of their own. A checkpoint copies the WAL's pages into
 * the database and fsyncs both files: on the main thread the turn whose commit set it off waits
 * for it, and the commit of a large photo always does (docs/decisions/0004-checkpoint-thread.md).
 * The main connection keeps a distant automatic checkpoint (FALLBACK_AUTOCHECKPOINT_PAGES) in case
 * this thread stops.
 */
export function startCheckpointer(
  path: string,
  deps: {
    onError(message: string): void;
    onRecovered(message: string): void;
    /** Tests only: how often to checkpoint. */
    intervalMs?: number;
  },
): Checkpointer {
  const workerData: CheckpointWorkerData = {
    path,
    intervalMs: deps.intervalMs ?? CHECKPOINT_INTERVAL_MS,
  };
  const worker = new Worker(builtWorkerUrl("./checkpoint-worker.js", import.meta.url), {
    workerData,
  });
  let stopping = false;
  // Terminating the thread while it loads better-sqlite3's addon aborts the whole process (Node 24:
  // "FATAL ERROR: Error::New napi_get_last_error_info"), so a stop waits until the thread has
  // opened its connection, or has ended.
  let opened: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    opened = resolve;
  });
  worker.on("message", (report: CheckpointReport) => {
    if ("ready" in report) opened();
    else if ("failed" in report) {
      deps.onError(
        `SQLite checkpoints are failing (${report.failed}); the WAL file grows until they work again: check the free disk space and the database file's permissions`,
      );
    } else {
      deps.onRecovered("SQLite checkpoints work again");
    }
  });
  worker.on("error", (error) =>
    deps.onError(`the SQLite checkpoint thread failed (${error.message}); ${FALLBACK}`),
  );
  worker.on("exit", (code) => {
    opened();
    if (!stopping)
      deps.onError(`the SQLite checkpoint thread stopped (exit code ${code}); ${FALLBACK}`);
  });
  // Checkpoints are no reason to keep the process alive.
  worker.unref();
  return {
    async stop() {
      stopping = true;
      // Unreferenced, the thread would let the process exit (with 0, mid-stop) while this waits.
      worker.ref();
      await ready;
      await worker.terminate();
    },
  };
}
