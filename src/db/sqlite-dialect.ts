import { AsyncLocalStorage } from "node:async_hooks";
import type SQLite from "better-sqlite3";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";

const STATEMENT_CACHE_SIZE = 200;

const atOnce = new AsyncLocalStorage<true>();

/**
 * Runs `write` so that its statements commit before it resolves, without waiting for the loop's
 * turn to end: a batch open when they come commits with them, at once. For the few writes that
 * record what already happened outside (an answer Telegram has accepted), where every moment
 * until the commit is a moment in which a crash makes the restart do it again.
 */
export function commitAtOnce<T>(write: () => Promise<T>): Promise<T> {
  return atOnce.run(true, write);
}

/**
 * Writes of one turn of the event loop that commit on their own before the rest are grouped. A
 * quiet bot writes once or twice a turn (a webhook stores an update and claims it; a turn appends
 * an event); alone, an autocommit costs less than a transaction that waits for the loop's turn.
 */
export const SOLO_WRITES_PER_TURN = 2;

type Waiter = { resolve(): void; reject(error: unknown): void };

/** Writes that share one open transaction, and the callers waiting for its COMMIT. */
type Batch = { waiters: Waiter[] };

/** What one caller of Kysely's connection API holds; the database itself is shared. */
class Connection implements DatabaseConnection {
  constructor(private readonly driver: GroupCommitDriver) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute<R>(this, query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    yield await this.driver.execute<R>(this, query);
  }
}

/**
 * Kysely's SQLite driver with group commit. Every commit writes its pages to the WAL and takes
 * the WAL's file locks: alone, that is two thirds of the cost of appending an event. When the bot
 * is busy, many chats' inserts and inbox updates arrive in the same turn of the event loop; the
 * first two commit on their own, at once, and the rest share one transaction that commits before
 * the loop waits for I/O again. Each caller's promise resolves only after its COMMIT, so nobody acts
 * on a write that could still be lost. Reads with no writes pending run at once, outside any
 * transaction.
 *
 * An explicit transaction (`db.transaction()`) has the connection to itself: it starts after the
 * pending writes commit, and other queries wait for it to end. Statements are prepared once and
 * cached, because Kysely's own driver prepares every query anew.
 */
class GroupCommitDriver implements Driver {
  readonly #database: SQLite.Database;
  readonly #statements = new Map<string, SQLite.Statement>();
  #batch: Batch | null = null;
  /** Writes that committed on their own in this turn of the event loop. */
  #soloWrites = 0;
  readonly #endTurn = () => {
    this.#soloWrites = 0;
  };
  /** The connection in an explicit transaction, and a promise that settles when it ends. */
  #owner: { connection: Connection; ended: Promise<void>; end(): void } | null = null;

  // IMMEDIATE takes the write lock at once (waiting up to busy_timeout for another process), so
  // a transaction that begins with a read never fails to upgrade to a write later.
  readonly #begin: SQLite.Statement;
  readonly #commitStatement: SQLite.Statement;
  readonly #rollback: SQLite.Statement;

  constructor(database: SQLite.Database) {
    this.#database = database;
    this.#begin = database.prepare("begin immediate");
    this.#commitStatement = database.prepare("commit");
    this.#rollback = database.prepare("rollback");
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Connection(this);
  }

  async releaseConnection(): Promise<void> {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#waitForOtherOwner(connection);
    this.#commit(this.#batch);
    this.#begin.run();
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    this.#owner = { connection: connection as Connection, ended, end };
  }

  async commitTransaction(): Promise<void> {
    // A failed COMMIT leaves the transaction open; Kysely then calls rollbackTransaction.
    this.#commitStatement.run();
    this.#endOwner();
  }

  async rollbackTransaction(): Promise<void> {
    try {
      if (this.#database.inTransaction) this.#rollback.run();
    } finally {
      this.#endOwner();
    }
  }

  async destroy(): Promise<void> {
    this.#commit(this.#batch);
    this.#database.close();
  }

  async execute<R>(connection: Connection, query: CompiledQuery): Promise<QueryResult<R>> {
    // Checked here first so that the common case, no transaction, costs no extra promise hop.
    if (this.#owner !== null && this.#owner.connection !== connection) {
      await this.#waitForOtherOwner(connection);
    }
    const statement = this.#prepare(query.sql);
    if (this.#owner !== null || (this.#batch === null && statement.readonly)) {
      return run<R>(statement, query.parameters);
    }
    if (this.#batch === null && this.#soloWrites < SOLO_WRITES_PER_TURN) {
      if (this.#soloWrites++ === 0) setImmediate(this.#endTurn);
      return run<R>(statement, query.parameters);
    }
    const urgent = atOnce.getStore() === true;
    if (urgent && this.#batch === null) return run<R>(statement, query.parameters);
    const batch = this.#openBatch();
    let result: QueryResult<R>;
    try {
      result = run<R>(statement, query.parameters);
    } catch (error) {
      // Most errors undo only their own statement; a few (disk full, I/O) roll back the whole
      // transaction, and with it the writes of everyone else in the batch.
      if (!this.#database.inTransaction) this.#fail(batch, error);
      throw error;
    }
    const committed = new Promise<void>((resolve, reject) =>
      batch.waiters.push({ resolve, reject }),
    );
    if (urgent) this.#commit(batch);
    await committed;
    return result;
  }

  async #waitForOtherOwner(connection: DatabaseConnection): Promise<void> {
    while (this.#owner !== null && this.#owner.connection !== connection) await this.#owner.ended;
  }

  #endOwner(): void {
    const owner = this.#owner;
    this.#owner = null;
    owner?.end();
  }

  #prepare(sql: string): SQLite.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#database.prepare(sql);
      // Bounded because some SQL (multi-row inserts) varies in shape.
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
        this.#statements.delete(this.#statements.keys().next().value as string);
      }
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #openBatch(): Batch {
    if (this.#batch !== null) return this.#batch;
    this.#begin.run();
    const batch: Batch = { waiters: [] };
    this.#batch = batch;
    // After this turn's I/O callbacks and their promise continuations have added their writes.
    setImmediate(() => this.#commit(batch));
    return batch;
  }

  #commit(batch: Batch | null): void {
    if (batch === null || batch !== this.#batch) return;
    this.#batch = null;
    try {
      this.#commitStatement.run();
    } catch (error) {
      if (this.#database.inTransaction) this.#rollback.run();
      this.#reject(batch, error);
      return;
    }
    for (const waiter of batch.waiters) waiter.resolve();
  }

  #fail(batch: Batch, error: unknown): void {
    if (this.#batch === batch) this.#batch = null;
    this.#reject(batch, error);
  }

  #reject(batch: Batch, cause: unknown): void {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const error = new Error(`the write was not committed (${reason}); it can be retried`, {
      cause,
    });
    for (const waiter of batch.waiters) waiter.reject(error);
  }
}

function run<R>(statement: SQLite.Statement, parameters: readonly unknown[]): QueryResult<R> {
  if (statement.reader) return { rows: statement.all(parameters) as R[] };
  const { changes, lastInsertRowid } = statement.run(parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/**
 * SQLite runs schema changes inside transactions, though Kysely's adapter does not claim it. With
 * the claim, the migrator applies the pending migrations together in one transaction (BEGIN
 * IMMEDIATE here): a crash halfway leaves nothing behind for the next start to trip over, and two
 * processes starting together migrate one after the other.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** Kysely's SQLite dialect on a better-sqlite3 database, with the group-commit driver above. */
export class GroupCommitSqliteDialect implements Dialect {
  constructor(private readonly database: SQLite.Database) {}

  createDriver(): Driver {
    return new GroupCommitDriver(this.database);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's Dialect interface takes an untyped Kysely.
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
