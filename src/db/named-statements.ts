import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import type Pg from "pg";

/**
 * Distinct statements one pool names. Kysely builds the same text for every run of a query shape,
 * and a service under the end-to-end benchmark ran 12; the cap bounds what odd shapes (a
 * multi-row insert of every length) could make each connection hold on the server, some KB each.
 * Past it, statements run unnamed.
 */
export const MAX_NAMED_STATEMENTS = 64;

/**
 * Run first on every connection. After five runs of a named statement PostgreSQL may switch to a
 * generic plan, made without the values; one for the inbox claim, most likely cached while the
 * inbox was nearly empty, later took 90 % of a core per claim. Planning every run with its values
 * keeps the plans unnamed statements always got.
 */
export const CUSTOM_PLANS = "set plan_cache_mode = force_custom_plan";

type StatementNames = (text: string) => string | undefined;

function statementNames(max: number): StatementNames {
  const names = new Map<string, string>();
  return (text) => {
    let name = names.get(text);
    if (name === undefined && names.size < max) {
      name = `koroku_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
}

/**
 * A pooled connection that sends every statement with parameters as a named prepared statement.
 * pg sends such a statement unnamed, so the server parses it again on every run; named, each
 * connection parses it once. Statements without parameters keep pg's simple protocol, which
 * allows several in one text. A parsed statement keeps the columns it returns: one that returns
 * `*` fails ("cached plan must not change result type") once a migration adds a column, so
 * queries name their columns (test/db/named-statements.test.ts checks src/).
 */
class NamingClient implements PostgresPoolClient {
  constructor(
    private readonly client: Pg.PoolClient,
    private readonly nameOf: StatementNames,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== "string") {
      return this.client.query(
        sqlOrCursor as unknown as Pg.Submittable,
      ) as unknown as PostgresCursor<R>;
    }
    // Kysely hands over a fresh array, and pg only reads it.
    const values = parameters as unknown[];
    const name = values.length > 0 ? this.nameOf(sqlOrCursor) : undefined;
    return this.client.query({ name, text: sqlOrCursor, values }) as unknown as Promise<
      PostgresQueryResult<R>
    >;
  }

  release(destroy?: boolean): void {
    this.client.release(destroy);
  }
}

/** Kysely's view of a pg pool whose queries with parameters are named prepared statements. */
export function namedStatementPool(pool: Pg.Pool, max = MAX_NAMED_STATEMENTS): PostgresPool {
  const nameOf = statementNames(max);
  return {
    connect: async () => new NamingClient(await pool.connect(), nameOf),
    end: () => pool.end(),
  };
}
