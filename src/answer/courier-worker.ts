import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import { KEEPALIVE_DELAY_MS, QUERY_TIMEOUT_MS } from "../db/postgres-pool.js";
import { NO_REDIRECTS } from "../http/no-redirects.js";

/**
 * The courier's thread (src/answer/courier.ts): Bot API calls, and the statement to run the
 * moment Telegram accepts one (the live view's calls, typing and drafts, come without one). Its
 * event loop does nothing else, so Telegram's reply is read, and the record committed, within a
 * millisecond or so however busy the service's own loop is. The statement comes compiled by
 * Kysely on the service's side: this thread knows no SQL, and no Telegram beyond `ok` and a sent
 * message's id.
 */

/** The database the thread opens a connection of its own to. */
export type CourierWorkerData = {
  database: { kind: "sqlite"; path: string } | { kind: "postgres"; connectionString: string };
};

/**
 * What records a message: a statement, and optionally the parameter that gets a JSON list of
 * message ids, `ids`, with the id Telegram gave the sent message in place of its null.
 */
export type CourierRecord = {
  sql: string;
  parameters: readonly unknown[];
  sentIds?: { parameter: number; ids: readonly (number | null)[] };
};

/** One Bot API call, its body already encoded, and its record if it has one. */
export type CourierJob = {
  id: number;
  method: string;
  url: string;
  contentType: string;
  body: string | Uint8Array;
  timeoutMs: number;
  record?: CourierRecord;
};

/** An error and its causes, outermost first, as the thread saw them. */
export type FailureLink = { name: string; message: string; code?: string };

/**
 * Telegram's response; `rows` what the record changed (unset: it did not run, `recordFailed`
 * says why when it failed), or the failure of a call that got no response.
 */
export type CourierReply =
  | { id: number; response: unknown; rows?: number; recordFailed?: string }
  | { id: number; failure: FailureLink[] };

/** "stop": finish the calls under way, close the connection and end; `cancel`: abort that call. */
export type CourierMessage = CourierJob | "stop" | { cancel: number };

type Store = {
  run(sql: string, parameters: readonly unknown[]): Promise<number>;
  close(): Promise<void>;
};

// PostgreSQL finishes a statement it has received whether or not this process lives on, so a
// record must not wait here for a connection: 4 are opened at once and kept, and a burst of
// replies may open up to 16 (with 4, a benchmark lost records that had waited that long).
const CONNECTIONS = 16;
const KEPT_OPEN = 4;

async function openStore(target: CourierWorkerData["database"]): Promise<Store> {
  if (target.kind === "sqlite") {
    const { default: SQLite } = await import("better-sqlite3");
    const db = new SQLite(target.path);
    db.pragma("busy_timeout = 5000");
    db.pragma("synchronous = NORMAL");
    // Checkpoints are the checkpoint thread's: one inside a record would hold the next replies.
    db.pragma("wal_autocheckpoint = 0");
    const prepared = new Map<string, ReturnType<typeof db.prepare>>();
    return {
      async run(sql, parameters) {
        let statement = prepared.get(sql);
        if (statement === undefined) {
          statement = db.prepare(sql);
          prepared.set(sql, statement);
        }
        return statement.run([...parameters]).changes;
      },
      async close() {
        db.close();
      },
    };
  }
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: CONNECTIONS,
    min: KEPT_OPEN,
    idleTimeoutMillis: 60_000,
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    // pool.query closes a connection whose statement failed, a timed-out one with the rest.
    query_timeout: QUERY_TIMEOUT_MS,
  });
  // A connection that fails is dropped by the pool; the next record opens another.
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  for (let i = 0; i < KEPT_OPEN; i++) {
    pool.connect().then(
      (client) => client.release(),
      () => {},
    );
  }
  return {
    async run(sql, parameters) {
      return (await pool.query(sql, [...parameters])).rowCount ?? 0;
    },
    close: () => pool.end(),
  };
}

function failureChain(error: unknown): FailureLink[] {
  const links: FailureLink[] = [];
  let current = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    const code = (current as { code?: unknown }).code;
    links.push({
      name: current.name,
      message: String(current.message),
      ...(typeof code === "string" ? { code } : {}),
    });
    current =
      current instanceof AggregateError && current.errors.length > 0
        ? current.errors[0]
        : current.cause;
  }
  return links;
}

/** The record's parameters, with the sent message's id spliced in where the record asks for it. */
function parametersOf(record: CourierRecord, response: unknown): readonly unknown[] {
  if (!record.sentIds) return record.parameters;
  const result = (response as { result?: { message_id?: unknown } }).result;
  const id = result?.message_id;
  if (typeof id !== "number") throw new Error("Telegram's reply names no message_id");
  const parameters = [...record.parameters];
  parameters[record.sentIds.parameter] = JSON.stringify(record.sentIds.ids.map((x) => x ?? id));
  return parameters;
}

async function carry(store: Store, job: CourierJob, cancel: AbortSignal): Promise<CourierReply> {
  let response: unknown;
  try {
    const res = await fetch(job.url, {
      method: "POST",
      headers: { "content-type": job.contentType },
      body: job.body,
      signal: AbortSignal.any([AbortSignal.timeout(job.timeoutMs), cancel]),
      ...NO_REDIRECTS,
    });
    response = await res.json();
  } catch (error) {
    const links = failureChain(error);
    if (error instanceof Error && error.name === "TimeoutError") {
      links.unshift({
        name: "Error",
        message: `Request to '${job.method}' timed out after ${job.timeoutMs / 1000} seconds`,
      });
    }
    return { id: job.id, failure: links };
  }
  if (
    job.record === undefined ||
    response === null ||
    typeof response !== "object" ||
    !("ok" in response) ||
    !response.ok
  ) {
    return { id: job.id, response };
  }
  try {
    const rows = await store.run(job.record.sql, parametersOf(job.record, response));
    return { id: job.id, response, rows };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    return {
      id: job.id,
      response,
      recordFailed: `${typeof code === "string" ? `${code}: ` : ""}${message}`,
    };
  }
}

function serve(port: MessagePort, data: CourierWorkerData): void {
  const store = openStore(data.database);
  let running = 0;
  let stopping = false;
  const close = async () => {
    await (await store).close().catch(() => {});
    port.close();
  };
  const cancels = new Map<number, AbortController>();
  port.on("message", async (message: CourierMessage) => {
    if (message === "stop") {
      stopping = true;
      if (running === 0) await close();
      return;
    }
    if ("cancel" in message) {
      cancels.get(message.cancel)?.abort();
      return;
    }
    running++;
    const cancel = new AbortController();
    cancels.set(message.id, cancel);
    const reply = await carry(await store, message, cancel.signal);
    cancels.delete(message.id);
    running--;
    port.postMessage(reply satisfies CourierReply);
    if (stopping && running === 0) await close();
  });
}

if (parentPort) serve(parentPort, workerData as CourierWorkerData);
