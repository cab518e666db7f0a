import { AsyncLocalStorage } from "node:async_hooks";
import type { PostgresPool, PostgresPoolClient } from "kysely";
import type Pg from "pg";

/**
 * How long a statement may go unanswered before its connection is given up. A connection whose
 * server vanished without closing it (a failover to another host, a network cut) would otherwise
 * wait for the operating system to give up retransmitting, about 15 minutes on Linux, and hold
 * the dispatcher's claims or a lease's renewal all that time. Koroku's statements take
 * milliseconds; loading a scope's vectors for recall, the longest, seconds.
 */
export const QUERY_TIMEOUT_MS = 60_000;

/**
 * TCP keepalive after this long without traffic, so that an idle connection (the LISTEN one
 * above all, which only ever waits) finds out that its server has gone.
 */
export const KEEPALIVE_DELAY_MS = 10_000;

/** pg's error for a statement past its `query_timeout`. */
const READ_TIMEOUT = "Query read timeout";

/** A statement sent on a connection given up after a timeout (a transaction's ROLLBACK). */
export const CONNECTION_GIVEN_UP =
  "the connection was given up: a statement on it got no answer in time";

const isQueryTimeout = (error: unknown): boolean =>
  error instanceof Error && error.message === READ_TIMEOUT;

export type TimedPool = PostgresPool & {
  /** Runs `work` with no time limit on the statements it starts (migrations). */
  unbounded<T>(work: () => Promise<T>): Promise<T>;
};

/** The longest timer Node keeps: a statement in `unbounded` waits as long as it takes. */
const NO_LIMIT_MS = 2 ** 31 - 1;

/** pg reads a query's own `query_timeout` before its pool's (its types leave it out). */
const withoutLimit = (
  text: string,
  values: unknown[],
): Pg.QueryConfig & { query_timeout: number } => ({ text, values, query_timeout: NO_LIMIT_MS });

/**
 * Kysely's view of a pg pool whose clients time statements out (the pool's `query_timeout`): a
 * statement that times out is failed, and so is every later one on its connection (a
 * transaction's ROLLBACK, which would wait out a second timeout behind the unanswered statement),
 * and the connection is closed rather than handed on.
 */
export function timedPool(pool: Pg.Pool): TimedPool {
  const unlimited = new AsyncLocalStorage<true>();
  // One view per connection, as Kysely keeps its own state per client object.
  const views = new WeakMap<Pg.PoolClient, PostgresPoolClient>();
  const viewOf = (client: Pg.PoolClient): PostgresPoolClient => {
    let broken = false;
    const markBroken = (error: unknown) => {
      if (isQueryTimeout(error)) broken = true;
    };
    // Kysely's other form, a cursor, is for streamed rows, which Koroku never asks for.
    const query = ((sql: string, parameters: unknown[]) => {
      if (broken) return Promise.reject(new Error(CONNECTION_GIVEN_UP));
      const result: Promise<Pg.QueryResult> = unlimited.getStore()
        ? client.query(withoutLimit(sql, parameters))
        : client.query(sql, parameters);
      // Noted beside the caller's own handling, which gets `result` itself.
      result.catch(markBroken);
      return result;
    }) as unknown as PostgresPoolClient["query"];
    return { query, release: () => client.release(broken) };
  };
  return {
    options: pool.options,
    end: () => pool.end(),
    async connect() {
      const client = await pool.connect();
      let view = views.get(client);
      if (view === undefined) {
        view = viewOf(client);
        views.set(client, view);
      }
      return view;
    },
    unbounded: (work) => unlimited.run(true, work),
  };
}
