import { Worker } from "node:worker_threads";
import {
  type Api,
  type ApiCallFn,
  GrammyError,
  HttpError,
  type RawApi,
  type Transformer,
} from "grammy";
import type { ApiResponse } from "grammy/types";
import type { DatabaseTarget } from "../config.js";
import { NO_REDIRECTS } from "../http/no-redirects.js";
import type { Logger } from "../logger.js";
import { builtWorkerUrl } from "../threads/worker-url.js";
import { type BotApiBody, botApiBody } from "./bot-api-body.js";
import type {
  CourierJob,
  CourierMessage,
  CourierRecord,
  CourierReply,
  CourierWorkerData,
  FailureLink,
} from "./courier-worker.js";

export type { CourierRecord } from "./courier-worker.js";

/** How long a Bot API call may take: grammY's default, which createBot keeps. */
const TIMEOUT_SECONDS = 500;

/** The calls that show an answer while it is written, which `live` sends on the thread. */
const LIVE_METHODS: ReadonlySet<string> = new Set([
  "sendChatAction",
  "sendMessageDraft",
  "sendRichMessageDraft",
]);

/** The calls that send what an answer is made of: a message, a rich message, a file, a voice note. */
export type CarriedMethod =
  | "sendMessage"
  | "sendRichMessage"
  | "sendPhoto"
  | "sendDocument"
  | "sendVoice";

type PayloadOf<M extends CarriedMethod> = Parameters<RawApi[M]>[0];
type ResultOf<M extends CarriedMethod> = Awaited<ReturnType<RawApi[M]>>;

/** `api.raw[method](payload)`, typed for one method at a time. */
const callRaw = <M extends CarriedMethod>(api: Api, method: M, payload: PayloadOf<M>) =>
  (api.raw[method] as (payload: PayloadOf<M>) => Promise<ResultOf<M>>)(payload);

/** A call's result, and what its record changed (undefined: it did not run, and the caller records). */
export type Carried<T> = { value: T; rows?: number };

/** Sends through one Api's transformers, recording on the courier's thread. */
export type Carrier = {
  /**
   * Calls `method` as `api.raw[method](payload)` would, through every transformer installed on
   * the Api (scrubbing, logs, metrics, retries), and when Telegram accepts it runs `record` on
   * the courier's connection the moment the reply is read. Without a record, or with no thread
   * to send it on, it is an ordinary call of the Api.
   */
  send<M extends CarriedMethod>(
    method: M,
    payload: PayloadOf<M>,
    record: CourierRecord | undefined,
  ): Promise<Carried<ResultOf<M>>>;
};

export type Courier = {
  /** What sends through `api`'s transformers (those installed when each call starts). */
  over(api: Api): Carrier;
  /**
   * Installed on an Api before its other transformers (so next to the request itself), sends the
   * live view's calls (typing, drafts) on the thread too, without a record: their requests, and
   * the memory each holds while it waits for Telegram, stay off the service's event loop and heap
   * (docs/decisions/0011-cpu-per-turn.md). A call whose signal aborts is aborted on the thread.
   */
  live: Transformer;
  /** Lets calls under way finish, then closes the thread and its connection. */
  stop(): Promise<void>;
};

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

const networkFailure = (method: string, cause: unknown) =>
  new HttpError(`Network request for '${method}' failed!`, cause);

/** grammY's base call, for when there is no thread: the same request on this one. */
async function fetchHere(url: string, request: BotApiBody, method: string): Promise<unknown> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": request.contentType },
      body: request.body,
      signal: AbortSignal.timeout(TIMEOUT_SECONDS * 1000),
      ...NO_REDIRECTS,
    });
    return await res.json();
  } catch (error) {
    throw networkFailure(method, error);
  }
}

/**
 * Sends the messages and files of answers, and records that Telegram has them, on a thread of its
 * own (src/answer/courier-worker.ts): under load the service's event loop reads a reply late,
 * and a crash in between sends the message again after the restart
 * (docs/decisions/0006-courier-thread.md).
 */
export function startCourier(deps: {
  token: string;
  apiRoot: string;
  /** The service's database, which the thread opens a connection of its own to. */
  database: DatabaseTarget;
  logger: Logger;
}): Courier {
  const worker = new Worker(builtWorkerUrl("./courier-worker.js", import.meta.url), {
    workerData: { database: deps.database } satisfies CourierWorkerData,
  });
  // A courier never keeps the process alive by itself: the service stops it once drained.
  worker.unref();
  const pending = new Map<
    number,
    { resolve(reply: CourierReply): void; reject(error: Error): void }
  >();
  let nextId = 1;
  let gone: Error | undefined;
  let exited = false;
  let stopping = false;
  let stopped: Promise<void> | undefined;

  worker.on("message", (reply: CourierReply) => {
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
    // Stopped as asked: later sends go on this thread, as after a failure, without its log.
    gone ??= new Error("the courier has stopped");
    for (const { reject } of pending.values()) reject(gone);
    pending.clear();
  });

  /** Whether calls go to the thread: it runs, and is not being stopped. */
  const open = () => !gone && !stopping;

  function post(job: Omit<CourierJob, "id">, id = nextId++): Promise<CourierReply> {
    return new Promise((resolve, reject) => {
      // A message to a thread that has ended is dropped without a word: it would never settle.
      if (exited) {
        reject(gone ?? new Error("the courier has stopped"));
        return;
      }
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...job, id } satisfies CourierMessage);
    });
  }

  /**
   * Sends one call on the thread, with its record if it has one, and gives Telegram's answer; a
   * failure to reach Telegram is thrown as grammY throws it.
   */
  async function carried(
    method: string,
    url: string,
    request: BotApiBody,
    record?: CourierRecord,
    id = nextId++,
  ): Promise<Exclude<CourierReply, { failure: unknown }>> {
    let reply: CourierReply;
    try {
      reply = await post(
        { method, url, ...request, timeoutMs: TIMEOUT_SECONDS * 1000, ...(record && { record }) },
        id,
      );
    } catch (error) {
      // The thread died with the call under way: whether Telegram has the message is unknown,
      // as after a network failure, which is retried the same way.
      throw networkFailure(method, error);
    }
    if ("failure" in reply) throw networkFailure(method, rebuild(reply.failure));
    return reply;
  }

  const urlOf = (method: string) => `${deps.apiRoot}/bot${deps.token}/${method}`;
  const bodyOf = (payload: unknown) => botApiBody(payload as Record<string, unknown>);

  /**
   * The innermost call for one carried request, in place of grammY's own: it sends on the thread,
   * which runs the record once Telegram accepts. `recorded` hears what the record changed.
   */
  const baseCall =
    (record: CourierRecord, recorded: (rows: number) => void): ApiCallFn =>
    async (method, payload) => {
      const url = urlOf(method);
      const request = await bodyOf(payload);
      // The thread ended between two attempts (a retry): this one goes as grammY sends it.
      if (!open()) return fetchHere(url, request, method) as never;
      const reply = await carried(method, url, request, {
        ...record,
        parameters: [...record.parameters],
      });
      if (reply.rows !== undefined) recorded(reply.rows);
      if (reply.recordFailed !== undefined) {
        deps.logger.warn(
          { method, error: reply.recordFailed },
          "the courier could not record a message Telegram accepted; recording it on the main connection",
        );
      }
      return reply.response as never;
    };

  const live: Transformer = async (prev, method, payload, signal) => {
    if (!LIVE_METHODS.has(method) || !open() || signal?.aborted) {
      return prev(method, payload, signal);
    }
    const request = await bodyOf(payload);
    const id = nextId++;
    const cancel = () => worker.postMessage({ cancel: id } satisfies CourierMessage);
    signal?.addEventListener("abort", cancel);
    try {
      return (await carried(method, urlOf(method), request, undefined, id)).response as never;
    } finally {
      signal?.removeEventListener("abort", cancel);
    }
  };

  return {
    live,
    over(api) {
      return {
        async send(method, payload, record) {
          if (record === undefined || !open())
            return { value: await callRaw(api, method, payload) };
          let rows: number | undefined;
          // The Api's transformers around the thread, composed as grammY composes them.
          const call = api.config.installedTransformers().reduce<ApiCallFn>(
            (prev, transformer) => (m, p, s) => transformer(prev, m, p, s),
            baseCall(record, (changed) => {
              rows = changed;
            }),
          );
          const data = (await call(method, payload as never)) as ApiResponse<
            ResultOf<typeof method>
          >;
          if (!data.ok)
            throw new GrammyError(`Call to '${method}' failed!`, data, method, payload as never);
          return { value: data.result, rows };
        },
      };
    },
    stop() {
      stopping = true;
      stopped ??= exited
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            // Unreferenced, the thread would let the process exit before it has drained.
            worker.ref();
            worker.once("exit", () => resolve());
            worker.postMessage("stop" satisfies CourierMessage);
          });
      return stopped;
    },
  };
}

/** No thread: every call goes as grammY sends it and is recorded by the caller. */
export const noCourier: Courier = {
  live: (prev, method, payload, signal) => prev(method, payload, signal),
  over: (api) => ({
    send: async (method, payload) => ({ value: await callRaw(api, method, payload) }),
  }),
  stop: async () => {},
};
