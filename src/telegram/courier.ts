import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { HttpError, type Transformer } from "grammy";
import type { CompiledQuery } from "kysely";
import type { DatabaseTarget } from "../config.js";
import type { Logger } from "../logger.js";

/**
 * The messages an answer is made of: the calls whose acceptance by Telegram must be recorded
 * before anything else happens (see docs/decisions/0006-courier-thread.md).
 */
const CARRIED_METHODS: ReadonlySet<string> = new Set(["sendMessage", "sendRichMessage"]);

/** How long a Bot API call may take: grammY's default, which createBot keeps. */
const TIMEOUT_SECONDS = 500;

/**
 * The payload field by which `carry` hands its statement to the transformer, through the
 * transformers between them (auto-retry's retries included); the transformer takes it out.
 */
const TICKET_FIELD = "koroku_courier_ticket";

/** grammY's JSON: null values left out. */
const withoutNulls = (_key: string, value: unknown) => value ?? undefined;

export type CourierStatement = Pick<CompiledQuery, "sql" | "parameters">;

/** What the thread is asked to do: one Bot API call, and the statement to run if Telegram accepts it. */
type Job = {
  id: number;
  method: string;
  url: string;
  body: string;
  timeoutMs: number;
  statement: { sql: string; parameters: readonly unknown[] };
};

/** An error and its causes, outermost first, as the thread saw them. */
type FailureLink = { name: string; message: string; code?: string };

type Reply =
  | { id: number; response: unknown; rows?: number; recordFailed?: string }
  | { id: number; failure: FailureLink[] };

type WorkerData = {
  database:
    | { kind: "sqlite"; driver: string; path: string }
    | { kind: "postgres"; driver: string; connectionString: string };
};

// A script rather than a module file, so that it runs the same from dist/ and from the TypeScript
// sources under the test runner. Its event loop does nothing but these calls, so Telegram's reply
// is read, and the record committed, within a millisecond or so however busy the service's own
// loop is. The statement comes compiled by Kysely on the service's side: this thread knows no SQL.
// PostgreSQL finishes a statement it has received whether or not this process lives on, so a
// record must not wait here for a connection: 4 are opened at once and kept, and a burst of
// replies may open up to 16 (with 4, a benchmark lost records that had waited that long).
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const CONNECTIONS = 16;
const KEPT_OPEN = 4;

function openStore(target) {
  if (target.kind === "sqlite") {
    const SQLite = require(target.driver);
    const db = new SQLite(target.path);
    db.pragma("busy_timeout = 5000");
    db.pragma("synchronous = NORMAL");
    // Checkpoints are the checkpoint thread's: one inside a record would hold the next replies.
    db.pragma("wal_autocheckpoint = 0");
    const prepared = new Map();
    return {
      async run(sql, parameters) {
        let statement = prepared.get(sql);
        if (statement === undefined) {
          statement = db.prepare(sql);
          prepared.set(sql, statement);
        }
        return statement.run(...parameters).changes;
      },
      async close() { db.close(); },
    };
  }
  const pg = require(target.driver);
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: CONNECTIONS,
    min: KEPT_OPEN,
    idleTimeoutMillis: 60000,
    connectionTimeoutMillis: 5000,
  });
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  for (let i = 0; i < KEPT_OPEN; i++) pool.connect().then((client) => client.release(), () => {});
  return {
    async run(sql, parameters) {
      return (await pool.query(sql, parameters)).rowCount;
    },
    close: () => pool.end(),
  };
}

function failureChain(error) {
  const links = [];
  let current = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    links.push({ name: current.name, message: String(current.message), code: current.code });
    current = current instanceof AggregateError && current.errors.length > 0 ? current.errors[0] : current.cause;
  }
  return links;
}

const store = openStore(workerData.database);
let running = 0;
let stopping = false;

async function carry(job) {
  let response;
  try {
    const res = await fetch(job.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: job.body,
      signal: AbortSignal.timeout(job.timeoutMs),
    });
    response = await res.json();
  } catch (error) {
    const links = failureChain(error);
    if (error && error.name === "TimeoutError") {
      links.unshift({ name: "Error", message: "Request to '" + job.method + "' timed out after " + job.timeoutMs / 1000 + " seconds" });
    }
    return { id: job.id, failure: links };
  }
  if (response === null || typeof response !== "object" || response.ok !== true) {
    return { id: job.id, response };
  }
  try {
    return { id: job.id, response, rows: await store.run(job.statement.sql, job.statement.parameters) };
  } catch (error) {
    return { id: job.id, response, recordFailed: (error && error.code ? error.code + ": " : "") + String(error && error.message) };
  }
}

async function close() {
  await store.close().catch(() => {});
  parentPort.close();
}

parentPort.on("message", async (message) => {
  if (message === "stop") {
    stopping = true;
    if (running === 0) await close();
    return;
  }
  running++;
  const reply = await carry(message);
  running--;
  parentPort.postMessage(reply);
  if (stopping && running === 0) await close();
});
`;

/** Rebuilds the thread's error chain, so that the network-failure log names the same cause. */
function rebuild(links: readonly FailureLink[]): Error {
  let cause: Error | undefined;
  for (const link of [...links].reverse()) {
    const error: Error & { code?: string } = new Error(link.message, cause ? { cause } : undefined);
    error.name = link.name;
    if (link.code !== undefined) error.code = link.code;
    cause = error;
  }
  return cause ?? new Error("unknown failure");
}

export type Courier = {
  /**
   * The innermost transformer of the Bot API (installed first): it sends the calls `carry` hands
   * it on the courier's thread, every other call as grammY would.
   */
  transformer: Transformer;
  /**
   * Runs `call`, a call of the Bot API (with its retries) that spreads `extra` into its options.
   * When it is a message of an answer and Telegram accepts it, `statement` runs on the courier's
   * own connection the moment the reply is read; `rows` says what it changed (undefined: it did
   * not run, and the caller records).
   */
  carry<T>(
    statement: CourierStatement | undefined,
    call: (extra: Record<string, number>) => Promise<T>,
  ): Promise<Carried<T>>;
  /** Lets calls under way finish, then closes the thread and its connection. */
  stop(): Promise<void>;
};

export type Carried<T> = { value: T; rows?: number };

/** The statement a call carries, and what running it changed once it ran. */
type Carrying = { statement: CourierStatement; rows?: number };

/**
 * Sends the messages of answers, and records that Telegram has them, on a thread of its own:
 * under load the service's event loop reads a reply late, and a crash in between sends the
 * message again after the restart (docs/decisions/0006-courier-thread.md).
 */
export function startCourier(deps: {
  token: string;
  apiRoot: string;
  /** The service's database, which the thread opens a connection of its own to. */
  database: DatabaseTarget;
  logger: Logger;
}): Courier {
  const require = createRequire(import.meta.url);
  const database: WorkerData["database"] =
    deps.database.kind === "sqlite"
      ? { ...deps.database, driver: require.resolve("better-sqlite3") }
      : { ...deps.database, driver: require.resolve("pg") };
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { database } satisfies WorkerData,
  });
  // A courier never keeps the process alive by itself: the service stops it once drained.
  worker.unref();
  const tickets = new Map<number, Carrying>();
  const pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  let nextId = 1;
  let gone: Error | undefined;
  let exited = false;
  let stopping = false;
  let stopped: Promise<void> | undefined;

  worker.on("message", (reply: Reply) => {
    pending.get(reply.id)?.resolve(reply);
    pending.delete(reply.id);
  });
  const fail = (error: Error) => {
    if (gone) return;
    gone = error;
    deps.logger.error(
      { err: error },
      "the courier thread stopped; answers are sent and recorded on the main thread from now on",
    );
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  worker.on("error", fail);
  worker.on("exit", (code) => {
    exited = true;
    if (!stopping) fail(new Error(`the courier thread exited with code ${code}`));
    // Stopped as asked: later sends go through grammY, as after a failure, without its log.
    gone ??= new Error("the courier has stopped");
    for (const { reject } of pending.values()) reject(gone);
    pending.clear();
  });

  /** Whether calls go to the thread: it runs, and is not being stopped. */
  const open = () => !gone && !stopping;

  function post(job: Omit<Job, "id">): Promise<Reply> {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      // A message to a thread that has ended is dropped without a word: it would never settle.
      if (exited) {
        reject(gone ?? new Error("the courier has stopped"));
        return;
      }
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...job, id } satisfies Job);
    });
  }

  const transformer: Transformer = async (prev, method, payload, signal) => {
    const fields = payload as Record<string, unknown>;
    const ticket = fields[TICKET_FIELD];
    if (typeof ticket !== "number") return prev(method, payload, signal);
    const { [TICKET_FIELD]: _, ...rest } = fields;
    const call = rest as typeof payload;
    const carried = tickets.get(ticket);
    // A call that can be aborted stays with grammY, which knows how to abort it.
    if (
      !carried ||
      carried.rows !== undefined ||
      !open() ||
      signal ||
      !CARRIED_METHODS.has(method)
    ) {
      return prev(method, call, signal);
    }
    let reply: Reply;
    try {
      reply = await post({
        method,
        url: `${deps.apiRoot}/bot${deps.token}/${method}`,
        body: JSON.stringify(call, withoutNulls),
        timeoutMs: TIMEOUT_SECONDS * 1000,
        statement: { sql: carried.statement.sql, parameters: [...carried.statement.parameters] },
      });
    } catch (error) {
      // The thread died with the call under way: whether Telegram has the message is unknown, as
      // after a network failure, which is retried the same way.
      throw new HttpError(`Network request for '${method}' failed!`, error);
    }
    if ("failure" in reply) {
      throw new HttpError(`Network request for '${method}' failed!`, rebuild(reply.failure));
    }
    if (reply.rows !== undefined) carried.rows = reply.rows;
    if (reply.recordFailed !== undefined) {
      deps.logger.warn(
        { method, error: reply.recordFailed },
        "the courier could not record a message Telegram accepted; recording it on the main connection",
      );
    }
    return reply.response as Awaited<ReturnType<typeof prev>>;
  };

  let nextTicket = 1;
  return {
    transformer,
    async carry(statement, call) {
      if (statement === undefined || !open()) return { value: await call({}) };
      const ticket = nextTicket++;
      const carried: Carrying = { statement };
      tickets.set(ticket, carried);
      try {
        const value = await call({ [TICKET_FIELD]: ticket });
        return { value, rows: carried.rows };
      } finally {
        tickets.delete(ticket);
      }
    },
    stop() {
      stopping = true;
      stopped ??= exited
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            worker.once("exit", () => resolve());
            worker.postMessage("stop");
          });
      return stopped;
    },
  };
}

/** No thread: every message goes as grammY sends it and is recorded by the caller. */
export const noCourier: Courier = {
  transformer: (prev, method, payload, signal) => prev(method, payload, signal),
  carry: async (_statement, call) => ({ value: await call({}) }),
  stop: async () => {},
};
