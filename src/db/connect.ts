import { createRequire } from "node:module";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import {
  type AbortableQueryOptions,
  type Compilable,
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  isCompilable,
  Kysely,
  type KyselyConfig,
  PostgresDialect,
  type QueryResult,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
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
import { KEEPALIVE_DELAY_MS, QUERY_TIMEOUT_MS, timedPool } from "./postgres-pool.js";
import type { Database } from "./schema.js";

export type DatabaseKind = DatabaseTarget["kind"];

export type DatabaseHandle = {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /**
   * Runs `work` with no time limit on its statements (migrations); the service's own statements
   * on PostgreSQL give up after QUERY_TIMEOUT_MS (src/db/postgres-pool.ts).
   */
  unbounded<T>(work: () => Promise<T>): Promise<T>;
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

/** A statement asked of the database, with its caller's promise. */
type Asked = {
  query: CompiledQuery;
  resolve(result: QueryResult<unknown>): void;
  reject(error: unknown): void;
};

type Settled = { ok: QueryResult<unknown> } | { error: unknown };

const BEGIN = CompiledQuery.raw("begin immediate");
const COMMIT = CompiledQuery.raw("commit");
const ROLLBACK = CompiledQuery.raw("rollback");

/**
 * The one connection to a SQLite file: each statement prepared through the statement cache and run
 * at once (better-sqlite3 is synchronous), every failure told to `onError` (metrics) before its
 * caller gets it. Kysely's own connection does the same runs; the service counted failures through
 * Kysely's query log, which wraps every statement in further awaits and timings.
 */
class SqliteFileConnection implements DatabaseConnection {
  constructor(
    private readonly database: StatementCache,
    private readonly onError: ((error: unknown) => void) | undefined,
  ) {}

  /** The statement's result, or its error thrown: both before this returns. */
  runNow<R>(query: CompiledQuery): QueryResult<R> {
    try {
      const statement = this.database.prepare(query.sql);
      if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
      const { changes, lastInsertRowid } = statement.run(query.parameters);
      return { insertId: BigInt(lastInsertRowid), numAffectedRows: BigInt(changes), rows: [] };
    } catch (error) {
      this.onError?.(error);
      throw error;
    }
  }

  /**
   * Runs the statements in order in one transaction, and settles each caller once it has been
   * committed. A statement that fails is undone alone (SQLite's statement-level rollback) and its
   * caller gets the error; should SQLite end the whole transaction instead (a full disk, an I/O
   * error) or the commit fail, nothing of it stayed, and the others run again one at a time.
   */
  runTogether(batch: readonly Asked[]): void {
    const results = batch.length > 1 ? this.#runInOneTransaction(batch) : undefined;
    if (results === undefined) {
      this.#runAlone(batch);
      return;
    }
    batch.forEach((asked, i) => {
      const result = results[i];
      if (result && "ok" in result) asked.resolve(result.ok);
      else asked.reject(result?.error);
    });
  }

  /** Each statement's result or error, once committed; undefined when nothing of it stayed. */
  #runInOneTransaction(batch: readonly Asked[]): Settled[] | undefined {
    const results: Settled[] = [];
    try {
      this.runNow(BEGIN);
      for (const asked of batch) {
        try {
          results.push({ ok: this.runNow(asked.query) });
        } catch (error) {
          if (!this.database.inTransaction) throw error;
          results.push({ error });
        }
      }
      this.runNow(COMMIT);
      return results;
    } catch {
      if (this.database.inTransaction) this.runNow(ROLLBACK);
      return undefined;
    }
  }

  #runAlone(batch: readonly Asked[]): void {
    for (const asked of batch) {
      try {
        asked.resolve(this.runNow(asked.query));
      } catch (error) {
        asked.reject(error);
      }
    }
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.runNow<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    try {
      const rows = this.database.prepare(query.sql).iterate(query.parameters);
      for (const row of rows) yield { rows: [row as R] };
    } catch (error) {
      this.onError?.(error);
      throw error;
    }
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
  readonly #connection: SqliteFileConnection;
  /** Statements asked since the last batch ran, waiting for the next. */
  #batch: Asked[] | undefined;
  /** Kysely has initialised the driver (and so will close the database when destroyed). */
  #initialised = false;

  constructor(database: StatementCache, onError: ((error: unknown) => void) | undefined) {
    super({ database });
    this.#connection = new SqliteFileConnection(database, onError);
  }

  override async init(): Promise<void> {
    await super.init();
    this.#initialised = true;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#held = true;
    return this.#connection;
  }

  override async releaseConnection(): Promise<void> {
    // Handed straight to the next in line, which holds it from here.
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN);
  }

  /**
   * Runs a statement together with the others asked before the event loop next turns, in one
   * transaction (`runTogether`). The batch takes its place in line for the connection when its
   * first statement is asked: a statement asked through Kysely after that runs after the batch
   * (a compiled one asked meanwhile joins it), and none of the batch's comes inside another's
   * transaction. Undefined before Kysely's first statement has initialised the driver: the
   * statement then takes Kysely's way. A statement that begins or ends a transaction has no place
   * here (Kysely's `transaction()` is for that): one that ended the batch's would leave the rest
   * of it committed one by one, and then run again.
   */
  runInBatch<R>(query: CompiledQuery): Promise<QueryResult<R>> | undefined {
    if (!this.#initialised) return undefined;
    return new Promise<QueryResult<R>>((resolve, reject) => {
      const asked: Asked = {
        query,
        resolve: resolve as (result: QueryResult<unknown>) => void,
        reject,
      };
      if (this.#batch !== undefined) {
        this.#batch.push(asked);
        return;
      }
      const batch = [asked];
      this.#batch = batch;
      void this.acquireConnection().then(() =>
        setImmediate(() => {
          this.#batch = undefined;
          try {
            this.#connection.runTogether(batch);
          } finally {
            void this.releaseConnection();
          }
        }),
      );
    });
  }
}

/** Kysely's SQLite dialect, with migrations in one transaction and transactions begun immediate. */
class TransactionalDdlSqliteDialect extends SqliteDialect {
  readonly driver: ImmediateSqliteDriver;

  constructor(database: StatementCache, onQueryError: ((error: unknown) => void) | undefined) {
    super({ database });
    this.driver = new ImmediateSqliteDriver(database, onQueryError);
  }

  override createDriver(): Driver {
    return this.driver;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * A compiled statement run on the database itself (`db.executeQuery`, as src/db/precompiled.ts
 * runs the statements every turn runs) goes straight to SQLite, with the others asked in the same
 * turn of the event loop, in one transaction (ImmediateSqliteDriver.runInBatch): not through
 * Kysely's executor, driver and connection provider, about ten awaits and their promises for a
 * statement SQLite runs synchronously, and one commit for many, where each commit rewrites the
 * pages it touched and the full-text index adds a segment (docs/decisions/0011-cpu-per-turn.md).
 * Built queries, transactions (a Kysely `Transaction`, not this class) and calls with options take
 * Kysely's way. The service's Kysely has no plugins, whose result transforms this would skip.
 */
class SqliteKysely extends Kysely<Database> {
  readonly #driver: ImmediateSqliteDriver;

  constructor(dialect: TransactionalDdlSqliteDialect) {
    super({ dialect });
    this.#driver = dialect.driver;
  }

  override executeQuery<R>(
    query: CompiledQuery<R> | Compilable<R>,
    options?: AbortableQueryOptions,
  ): Promise<QueryResult<R>> {
    if (options === undefined && !isCompilable(query)) {
      const batched = this.#driver.runInBatch<R>(query);
      if (batched !== undefined) return batched;
    }
    return super.executeQuery(query, options);
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

/** The database as Kysely's SQLite driver uses it, and whether a transaction is open on it. */
export type StatementCache = SqliteDatabase & { readonly inTransaction: boolean };

/**
 * Kysely's driver prepares every statement it runs, each time: with better-sqlite3 that is a
 * compile by SQLite and a native object for the collector, for every query of every turn. This
 * keeps them by SQL text and runs them again (docs/decisions/0005-sqlite-statement-cache.md).
 */
export function withStatementCache(database: SQLite.Database): StatementCache {
  const statements = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  return {
    get inTransaction() {
      return database.inTransaction;
    },
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
  /** PostgreSQL: how long a statement may go unanswered (default QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
};

/** Kysely's query log, used only to hear of failed queries. */
const errorLog = (onQueryError: OpenOptions["onQueryError"]): KyselyConfig["log"] =>
  onQueryError &&
  ((event) => {
    if (event.level === "error") onQueryError(event.error);
  });

export function openDatabase(target: DatabaseTarget, options: OpenOptions = {}): DatabaseHandle {
  if (target.kind === "sqlite") {
    const { database, checkpointer } =
      target.path === ":memory:"
        ? { database: openSqlite(target.path), checkpointer: undefined }
        : openSqliteFile(target.path, options.logger);
    const dialect = new TransactionalDdlSqliteDialect(
      withStatementCache(database),
      options.onQueryError,
    );
    return handle(new SqliteKysely(dialect), "sqlite", checkpointer);
  }
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: options.poolSize ?? 10,
    types: pgTypes(pg),
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    query_timeout: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
  });
  // An idle client that loses its server (PostgreSQL restart) emits 'error'; without a listener
  // that would crash the process. The pool drops the client and the next query reconnects.
  pool.on("error", () => {});
  // The same for a client in the middle of a query: its query fails (and is retried by the
  // caller); without this listener the connection's 'error' event would end the process.
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  const timed = timedPool(pool);
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: timed }),
    log: errorLog(options.onQueryError),
  });
  return handle(db, "postgres", undefined, timed.unbounded);
}

function handle(
  db: Kysely<Database>,
  kind: DatabaseKind,
  checkpointer?: Checkpointer,
  unbounded: DatabaseHandle["unbounded"] = (work) => work(),
): DatabaseHandle {
  return {
    db,
    kind,
    unbounded,
    async close() {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
