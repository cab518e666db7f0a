import { dirname } from "node:path";
import { setTimeout } from "node:timers/promises";
import SQLite from "better-sqlite3";
import type { Logger } from "../logger.js";
import { makeFolders } from "./make-folders.js";

const POLL_MS = 250;

export type ServiceLock = { release(): void };

/** The lock is held by another service, or its file cannot be made; the message says what to do. */
export class ServiceLockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ServiceLockError";
  }
}

const heldElsewhere = (databasePath: string) =>
  new ServiceLockError(
    `Another Koroku service is running on ${databasePath}: SQLite serves one service process per database file, and two would answer some messages twice. Stop the other one, or run replicas on PostgreSQL (DATABASE_URL=postgres://…).`,
  );

/** The lock's own file: locking the database file itself would lock out the service's queries. */
export const lockPathOf = (databasePath: string) => `${databasePath}.lock`;

function openLockFile(path: string): SQLite.Database {
  try {
    makeFolders(dirname(path));
    // No busy timeout: a held lock is reported at once, and the caller decides how long to wait.
    return new SQLite(path, { timeout: 0 });
  } catch (error) {
    throw new ServiceLockError(
      `Cannot create the lock file ${path} (${(error as Error).message}): the database's folder must be writable by the service.`,
    );
  }
}

function tryLock(path: string): ServiceLock | undefined {
  const lock = openLockFile(path);
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
 * is waited for, up to `waitMs`; then ServiceLockError says what to do.
 */
export async function lockSqliteService(
  databasePath: string,
  options: { waitMs: number; logger: Logger; signal?: AbortSignal },
): Promise<ServiceLock> {
  const { signal } = options;
  const path = lockPathOf(databasePath);
  const deadline = Date.now() + options.waitMs;
  let lock = tryLock(path);
  if (!lock) {
    options.logger.warn(
      { path, wait_ms: options.waitMs },
      "another Koroku service holds this SQLite database; waiting for it to stop",
    );
  }
  while (!lock && Date.now() < deadline) {
    await setTimeout(POLL_MS, undefined, { signal });
    lock = tryLock(path);
  }
  if (!lock) throw heldElsewhere(databasePath);
  return lock;
}
