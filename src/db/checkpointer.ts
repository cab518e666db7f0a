import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * How often the checkpointer copies the WAL into the database: often enough to keep the WAL small,
 * seldom enough that its fsyncs do not compete with the service's writes.
 */
export const CHECKPOINT_INTERVAL_MS = 200;

/**
 * What the main connection's own checkpoints wait for instead of SQLite's default 1,000 pages: a
 * fallback for when the checkpointer is gone or behind, which keeps the WAL within about 40 MB.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

export type Checkpointer = { stop(): Promise<void> };

type WorkerData = { driver: string; path: string; intervalMs: number };

// A script rather than a module file, so that it runs the same from dist/ and from the TypeScript
// sources under the test runner. It opens a connection of its own to the same file; a PASSIVE
// checkpoint never waits for the writer and never blocks it.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.path);
db.pragma("busy_timeout = 5000");
setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (error) {
    parentPort.postMessage(error instanceof Error ? error.message : String(error));
  }
}, workerData.intervalMs);
`;

/**
 * Runs SQLite's WAL checkpoints on a thread of its own. A checkpoint copies the WAL's pages into
 * the database and fsyncs both files: on the main thread, the turn whose commit set it off waited
 * for it, a few milliseconds every hundred turns or so, which made most of the one-chat p99. The
 * main connection keeps a distant automatic checkpoint (FALLBACK_AUTOCHECKPOINT_PAGES) in case
 * this thread stops.
 */
export function startCheckpointer(
  path: string,
  deps: { onError(message: string): void; intervalMs?: number },
): Checkpointer {
  const workerData: WorkerData = {
    driver: createRequire(import.meta.url).resolve("better-sqlite3"),
    path,
    intervalMs: deps.intervalMs ?? CHECKPOINT_INTERVAL_MS,
  };
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
  let stopping = false;
  worker.on("message", (message: unknown) => deps.onError(`checkpoint failed: ${String(message)}`));
  worker.on("error", (error) => deps.onError(`checkpointer failed: ${error.message}`));
  worker.on("exit", (code) => {
    if (!stopping) deps.onError(`checkpointer stopped (exit code ${code})`);
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
