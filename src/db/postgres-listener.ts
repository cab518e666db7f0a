import type Pg from "pg";
import type { Logger } from "../logger.js";
import { createBackoff } from "../retry/backoff.js";
import { loadPg } from "./connect.js";
import { KEEPALIVE_DELAY_MS, QUERY_TIMEOUT_MS } from "./postgres-pool.js";

const RECONNECT_BACKOFF = { baseMs: 1_000, maxMs: 30_000 };

export type PostgresListener = {
  /** Resolves once the first LISTEN is in place (or the listener was closed first). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
};

/**
 * Listens on a PostgreSQL channel with a connection of its own: LISTEN belongs to a session, which
 * a pooled connection would give to the next query. A lost connection (the server restarted, the
 * network failed) is opened again, waiting up to 1 s, then up to twice as long each time up to 30 s;
 * notifications sent meanwhile are missed, so whatever they carry must reach its reader another
 * way too.
 */
export function listenPostgres(deps: {
  connectionString: string;
  channel: string;
  onNotification(payload: string): void;
  logger: Logger;
}): PostgresListener {
  const pg = loadPg();
  const log = deps.logger.child({ channel: deps.channel });
  let client: Pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const failures = createBackoff(RECONNECT_BACKOFF);
  let closed = false;
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  async function connect(): Promise<void> {
    retry = undefined;
    const connection = new pg.Client({
      connectionString: deps.connectionString,
      connectionTimeoutMillis: 5_000,
      // This connection only waits: keepalive finds a server gone without a word.
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
      query_timeout: QUERY_TIMEOUT_MS,
    });
    client = connection;
    connection.on("error", (error) => lost(connection, error));
    connection.on("end", () => lost(connection, new Error("the connection ended")));
    connection.on("notification", (message) => {
      if (message.channel === deps.channel && message.payload !== undefined) {
        deps.onNotification(message.payload);
      }
    });
    try {
      await connection.connect();
      await connection.query(`LISTEN ${connection.escapeIdentifier(deps.channel)}`);
    } catch (error) {
      lost(connection, error);
      return;
    }
    if (failures.failures > 0) log.info("listening for notifications again");
    failures.reset();
    markReady();
  }

  function lost(connection: Pg.Client, error: unknown): void {
    if (client !== connection) return;
    client = undefined;
    connection.end().catch(() => {});
    if (closed) return;
    const wait = failures.next();
    // Once per outage: a database away for minutes would otherwise log every attempt.
    if (failures.failures === 1) {
      log.warn({ err: error }, "not listening for notifications; trying to reconnect");
    }
    retry = setTimeout(() => void connect(), wait);
    retry.unref();
  }

  void connect();
  return {
    ready,
    async close() {
      closed = true;
      clearTimeout(retry);
      markReady();
      const connection = client;
      client = undefined;
      await connection?.end().catch(() => {});
    },
  };
}
