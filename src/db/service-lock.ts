import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import type { Logger } from "../logger.js";

const POLL_MS = 250;

export type ServiceLock = { release(): void };

export class ServiceLockedError extends Error {
  constructor(readonly databasePath: string) {
    super(
      `Another Koroku service is running on ${databasePath}: SQLite serves one service process per database file, and two would answer some messages twice. Stop the other one, or run replicas on PostgreSQL (DATABASE_URL=postgres://…).`,
    );
    this.name = "ServiceLockedError";
  }
}

/** The lock's own file: locking the database file itself would lock out the service's queries. */
export const lockPathOf = (databasePath: string) => `${databasePath}.lock`;

function tryLock(path: string): ServiceLock | undefined {
  // No busy timeout: a held lock is reported at once, and the caller decides how long to wait.
  const lock = new SQLite(path, { timeout: 0 });
  try {
    // An exclusive transaction holds the operating system's lock on the file until it ends, or
    // until the process does, however it dies (kill -9 included): nothing stale is left behind.
    lock.exec("begin exclusive");
    return { release: () => lock.close() };
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY") return undefined;
    throw error;
  }
}

/**
 * Makes this process the only service on a SQLite database file, for as long as it runs. The
 * inbox relies on that: at start-up it runs again at once whatever was left running, which would
 * take turns away from a second live process. A process still shutting down (a rolling restart)
 * is waited for, up to `waitMs`; then ServiceLockedError says what to do.
 */
export async function lockSqliteService(
  databasePath: string,
  options: { waitMs: number; logger: Logger },
): Promise<ServiceLock> {
  const path = lockPathOf(databasePath);
  mkdirSync(dirname(path), { recursive: true });
  const deadline = Date.now() + options.waitMs;
  let lock = tryLock(path);
  if (!lock) {
    options.logger.warn(
      { path, wait_ms: options.waitMs },
      "another Koroku service holds this SQLite database; waiting for it to stop",
    );
  }
  while (!lock && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    lock = tryLock(path);
  }
  if (!lock) throw new ServiceLockedError(databasePath);
  return lock;
}
