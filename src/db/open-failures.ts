import { parse as parsePostgresUrl } from "pg-connection-string";
import type { DatabaseTarget } from "../config.js";
import { StartupError } from "../startup-error.js";

type Failure = Error & {
  code?: string;
  syscall?: string;
  path?: string;
};

const asFailure = (error: unknown): Failure =>
  error instanceof Error ? (error as Failure) : new Error(String(error));

/** The first error in a chain of causes that names a code (pg's, SQLite's or the system's). */
function rootFailure(error: unknown): Failure {
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    if ((at as Failure).code !== undefined) return at as Failure;
  }
  return asFailure(error);
}

const runsAs = () => {
  const uid = process.getuid?.();
  return uid === undefined
    ? "the user the service runs as"
    : `the user the service runs as (uid ${uid})`;
};

/** Why a folder for the database cannot be made, by mkdir's error, and what to do. */
function folderProblem(code: string | undefined): string {
  switch (code) {
    case "EACCES":
    case "EPERM":
      return `permission denied. Make its parent folder writable by ${runsAs()}, or set DATABASE_URL to a path it can write to.`;
    case "EROFS":
      return "the file system is read-only. Set DATABASE_URL to a path on a writable one.";
    case "ENOSPC":
      return "the disk is full. Free some space, or set DATABASE_URL to a path on another disk.";
    case "ENOTDIR":
      return "part of the path is a file, not a folder. Fix the path in DATABASE_URL.";
    default:
      return "that file system does not take new folders there. Set DATABASE_URL to a path on a writable file system.";
  }
}

function sqliteFailure(failure: Failure, path: string): string | undefined {
  const { code = "", message } = failure;
  if (failure.syscall === "mkdir") {
    return `Cannot create the folder ${failure.path ?? path} for the SQLite database ${path} (${code}): ${folderProblem(code)}`;
  }
  if (code === "SQLITE_CANTOPEN") {
    return `Cannot open the SQLite database ${path} (${message}): its folder must be writable by ${runsAs()}, or set DATABASE_URL to a path that is.`;
  }
  if (code.startsWith("SQLITE_READONLY")) {
    return `The SQLite database ${path} is read-only for this service (${message}): make the file, and the folder it is in, writable by ${runsAs()}.`;
  }
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return `${path} is not a SQLite database Koroku can read (${message}): set DATABASE_URL to Koroku's database, restore it from a backup (docs/deployment.md), or to a path where none exists yet to start afresh.`;
  }
  if (code === "SQLITE_FULL") {
    return `The disk that holds the SQLite database ${path} is full (${message}): free some space and start again.`;
  }
  return undefined;
}

/** Where a connection string points, read as pg reads it, without its password. */
function postgresPlace(connectionString: string) {
  let parsed: ReturnType<typeof parsePostgresUrl> | undefined;
  try {
    parsed = parsePostgresUrl(connectionString);
  } catch {}
  const user = parsed?.user || "the default user";
  const host = parsed?.host || "localhost";
  // A socket folder (?host=/run/postgresql) is named as it is; a port only belongs to TCP.
  const server = host.startsWith("/") ? host : `${host}:${parsed?.port || "5432"}`;
  const database = parsed?.database || user;
  return { user, host, server, database };
}

function postgresFailure(failure: Failure, connectionString: string): string | undefined {
  const { user, host, server, database } = postgresPlace(connectionString);
  const { code = "", message } = failure;
  switch (code) {
    case "ECONNREFUSED":
      return `PostgreSQL at ${server} refused the connection (ECONNREFUSED): start PostgreSQL there, or fix the host and port in DATABASE_URL.`;
    case "ENOTFOUND":
      return `PostgreSQL's host "${host}" was not found (ENOTFOUND, no such host in DNS): fix the host in DATABASE_URL.`;
    case "EAI_AGAIN":
      return `PostgreSQL's host "${host}" could not be looked up (EAI_AGAIN, DNS did not answer): check the host in DATABASE_URL and this machine's DNS.`;
    case "28P01":
      return `PostgreSQL at ${server} rejected the password of "${user}" (${message}): fix the password in DATABASE_URL.`;
    case "3D000":
      return `PostgreSQL at ${server} has no database "${database}" (${message}): create it (CREATE DATABASE "${database}" OWNER "${user}"), or fix the database name in DATABASE_URL.`;
  }
  if (code === "28000" && /^role ".*" does not exist$/.test(message)) {
    return `PostgreSQL at ${server} has no role "${user}" (${message}): create it (CREATE ROLE "${user}" LOGIN PASSWORD '…'), or fix the user in DATABASE_URL.`;
  }
  return undefined;
}

/** Anything else: the error's own words (a failed migration says which), with where and what to check. */
function otherFailure(error: unknown, failure: Failure, target: DatabaseTarget): string {
  if (error instanceof Error && error !== failure) return error.message;
  const code = failure.code ? `${failure.code}: ` : "";
  if (target.kind === "sqlite") {
    return `Cannot use the SQLite database ${target.path} (${code}${failure.message}): check DATABASE_URL, the disk, and that the file and its folder are writable by ${runsAs()}.`;
  }
  const { user, server, database } = postgresPlace(target.connectionString);
  return `Cannot use the PostgreSQL database "${database}" at ${server} as "${user}" (${code}${failure.message}): check DATABASE_URL, and that PostgreSQL runs and lets this host in.`;
}

/** Opens a database; a failure (its folder, its file) is said as explainDatabaseFailure says it. */
export function openExplained<T>(target: DatabaseTarget, open: () => T): T {
  try {
    return open();
  } catch (error) {
    throw explainDatabaseFailure(error, target);
  }
}

/**
 * A database that cannot be opened or migrated at start-up, said in one line: what went wrong
 * and what to do (never the connection string, which may hold a password).
 */
export function explainDatabaseFailure(error: unknown, target: DatabaseTarget): StartupError {
  const failure = rootFailure(error);
  const said =
    (target.kind === "sqlite"
      ? sqliteFailure(failure, target.path)
      : postgresFailure(failure, target.connectionString)) ?? otherFailure(error, failure, target);
  // A server's message may run over lines; the operator gets one.
  return new StartupError(said.replace(/\s*\n\s*/g, " "), { cause: error });
}
