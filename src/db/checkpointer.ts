import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

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

type WorkerData = { driver: string; path: string; intervalMs: number };

/** What the worker tells the service: a failure (only when it differs from the last), or that checkpoints work again. */
type WorkerReport = { failed: string } | { recovered: true };

// A script rather than a module file, so that it runs the same from dist/ and from the TypeScript
// sources under the test runner. It opens a connection of its own to the same file; a PASSIVE
// checkpoint never waits for the writer and never blocks it. A failure that repeats (a full disk)
// is reported once, not five times a second.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.path);
db.pragma("busy_timeout = 5000");
let failing = null;
setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    if (failing !== null) {
      failing = null;
      parentPort.postMessage({ recovered: true });
    }
  } catch (error) {
    const message = (error && error.code ? error.code + ": " : "") + (error instanceof Error ? error.message : String(error));
    if (message !== failing) {
      failing = message;
      parentPort.postMessage({ failed: message });
    }
  }
}, workerData.intervalMs);
`;

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
  const workerData: WorkerData = {
    driver: createRequire(import.meta.url).resolve("better-sqlite3"),
    path,
    intervalMs: deps.intervalMs ?? CHECKPOINT_INTERVAL_MS,
  };
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
  let stopping = false;
  worker.on("message", (report: WorkerReport) => {
    if ("failed" in report) {
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
    if (!stopping)
      deps.onError(`the SQLite checkpoint thread stopped (exit code ${code}); ${FALLBACK}`);
  });
  // Checkpoints are no reason to keep the process alive.
  worker.unref();
  return {
    async stop() {
      stopping = true;
      await worker.terminate();
    },
  };
}
