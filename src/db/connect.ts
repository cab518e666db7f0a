import { createRequire } from "node:module";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  type KyselyConfig,
  PostgresDialect,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from "kysely";
import { LRUCache } from "lru-cache";
import type Pg from "pg";
import type { DatabaseTarget } from "../config.js";
import type { Logger } from "../logger.js";
import {
  type Checkpointer,
  FALLBACK_AUTOCHECKPOINT_PAGES,
  startCheckpointer,
} from "./checkpointer.js";
import { makeFolders } from "./make-folders.js";
import type { Database } from "./schema.js";

export type DatabaseKind = DatabaseTarget["kind"];

export type DatabaseHandle = {
  db: Kysely<Database>;
  kind: DatabaseKind;
  close(): Promise<void>;
};

/**
 * pg is loaded only when a PostgreSQL URL is configured: loading it costs about 45 ms of the
 * start-up of a SQLite service, which never uses it.
 */
export const loadPg = (): typeof Pg => createRequire(import.meta.url)("pg") as typeof Pg;

const INT8_OID = 20;

/**
 * pg returns BIGINT as strings to avoid precision loss past 2^53; our ids, Telegram update ids
 * and epoch milliseconds all stay far below that, so parse them as numbers like SQLite does.
 */
const pgTypes = (pg: typeof Pg) => ({
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
});

function openSqlite(path: string): SQLite.Database {
  const database = new SQLite(path);
  database.pragma("journal_mode = WAL");
  // Two replicas or the CLI may share the file: wait for a lock instead of failing at once.
  database.pragma("busy_timeout = 5000");
  // NORMAL in WAL mode never corrupts and loses nothing when the process dies (kill -9): a commit
  // is in the OS's hands once it returns. Only a power cut can drop the last commits, and FULL
  // would cost an fsync on every event we append, which is most of a turn's storage time.
  database.pragma("synchronous = NORMAL");
  return database;
}

/**
 * SQLite runs schema changes inside transactions, though Kysely's adapter does not claim it. With
 * the claim, the migrator applies the pending migrations together in one transaction: a crash
 * halfway leaves nothing behind for the next start to trip over.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }

  /**
   * One connection still, but the driver takes turns on it itself (ImmediateSqliteDriver):
   * Kysely's own lock for a single connection wakes every waiter at each release.
   */
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/**
 * Every transaction of ours writes. Begun deferred (Kysely's `begin`), one that reads first fails
 * at once with SQLITE_BUSY_SNAPSHOT when another connection to the file commits in between (the
 * courier's thread, the terminal chat); begun immediate, it waits for the write lock instead.
 *
 * Its one connection goes to one user at a time, in the order they asked, so that no statement
 * runs inside another's transaction. Kysely's lock (taken when the adapter says the dialect has
 * one connection) wakes every waiter at each release, and under a burst of turns hundreds wait:
 * each statement cost as many wake-ups (docs/decisions/0011-cpu-per-turn.md).
 */
class ImmediateSqliteDriver extends SqliteDriver {
  readonly #waiting: (() => void)[] = [];
  #held = false;

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#held = true;
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    // Handed straight to the next in line, which holds it from here.
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** Kysely's SQLite dialect, with migrations in one transaction and transactions begun immediate. */
class TransactionalDdlSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * A database file, with its checkpoints on a thread of their own (src/db/checkpointer.ts and
 * docs/decisions/0004-checkpoint-thread.md).
 */
function openSqliteFile(path: string, logger: Logger | undefined) {
  makeFolders(dirname(path));
  const database = openSqlite(path);
  database.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  const checkpointer = startCheckpointer(path, {
    onError: (message) => logger?.warn({ path }, message),
    onRecovered: (message) => logger?.info({ path }, message),
  });
  return { database, checkpointer };
}

/** Distinct statements kept prepared: the service's own are a few dozen. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's driver prepares every statement it runs, each time: with better-sqlite3 that is a
 * compile by SQLite and a native object for the collector, for every query of every turn. This
 * keeps them by SQL text and runs them again (docs/decisions/0005-sqlite-statement-cache.md).
 */
export function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  return {
    close: () => database.close(),
    prepare(sql) {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

export type OpenOptions = {
  poolSize?: number;
  /** Hears of a checkpoint thread that fails. */
  logger?: Logger;
  /** Told of every query that fails (metrics); the caller still gets the error. */
  onQueryError?: (error: unknown) => void;
};

/** Kysely's query log, used only to hear of failed queries. */
const errorLog = (onQueryError: OpenOptions["onQueryError"]): KyselyConfig["log"] =>
  onQueryError &&
  ((event) => {
    if (event.level === "error") onQueryError(event.error);
  });

export function openDatabase(target: DatabaseTarget, options: OpenOptions = {}): DatabaseHandle {
  const log = errorLog(options.onQueryError);
  if (target.kind === "sqlite") {
    const { database, checkpointer } =
      target.path === ":memory:"
        ? { database: openSqlite(target.path), checkpointer: undefined }
        : openSqliteFile(target.path, options.logger);
    const db = new Kysely<Database>({
      dialect: new TransactionalDdlSqliteDialect({ database: withStatementCache(database) }),
      log,
    });
    return handle(db, "sqlite", checkpointer);
  }
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: options.poolSize ?? 10,
    types: pgTypes(pg),
    connectionTimeoutMillis: 5_000,
  });
  // An idle client that loses its server (PostgreSQL restart) emits 'error'; without a listener
  // that would crash the process. The pool drops the client and the next query reconnects.
  pool.on("error", () => {});
  // The same for a client in the middle of a query: its query fails (and is retried by the
  // caller); without this listener the connection's 'error' event would end the process.
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log,
  });
  return handle(db, "postgres");
}

function handle(
  db: Kysely<Database>,
  kind: DatabaseKind,
  checkpointer?: Checkpointer,
): DatabaseHandle {
  return {
    db,
    kind,
    async close() {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
