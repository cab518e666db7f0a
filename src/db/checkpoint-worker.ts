import { parentPort, workerData } from "node:worker_threads";
import SQLite from "better-sqlite3";

/** What the service gives the checkpoint thread (src/db/checkpointer.ts). */
export type CheckpointWorkerData = { path: string; intervalMs: number };

/**
 * What the thread tells the service: that its connection is open, a failure (only when it differs
 * from the last), or that checkpoints work again.
 */
export type CheckpointReport = { ready: true } | { failed: string } | { recovered: true };

/**
 * The checkpoint thread: a connection of its own to the service's file, and a PASSIVE checkpoint
 * every interval, which never waits for the writer and never blocks it. A failure that repeats
 * (a full disk) is reported once, not five times a second.
 */
function runCheckpoints(port: NonNullable<typeof parentPort>, data: CheckpointWorkerData): void {
  const db = new SQLite(data.path);
  db.pragma("busy_timeout = 5000");
  port.postMessage({ ready: true } satisfies CheckpointReport);
  let failing: string | undefined;
  setInterval(() => {
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
      if (failing !== undefined) {
        failing = undefined;
        port.postMessage({ recovered: true } satisfies CheckpointReport);
      }
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const message = `${typeof code === "string" ? `${code}: ` : ""}${error instanceof Error ? error.message : String(error)}`;
      if (message !== failing) {
        failing = message;
        port.postMessage({ failed: message } satisfies CheckpointReport);
      }
    }
  }, data.intervalMs);
}

if (parentPort) runCheckpoints(parentPort, workerData as CheckpointWorkerData);
