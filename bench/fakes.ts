import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { IncomingMessage, ServerResponse } from "node:http";
import { type FakeGemini, type FakeGeminiOptions, startFakeGemini } from "../test/fakes/gemini.js";
import { type FakeTelegram, startFakeTelegram } from "../test/fakes/telegram.js";

/** A Bot API call the fake Telegram received, reported when its body has arrived. */
export type TelegramArrival = {
  method: string;
  chatId: number | undefined;
  text: string | undefined;
  /** performance.now() when the request's headers arrived. */
  at: number;
  /** performance.now() when the fake's reply was handed to the socket; unset until then. */
  repliedAt?: number;
};

/** What the fakes saw since the previous stats call. */
export type FakesStats = {
  /** Time each generateContent request spent in the fake Gemini, from arrival to answer sent. */
  geminiMs: number[];
  /** Running totals since the fakes started, unlike geminiMs. */
  totals: { geminiRejections: number; sendMessages: number; telegram429s: number };
};

/**
 * The fake Telegram and the fake Gemini, in the benchmark's own process, beside the load
 * generator and away from the service. The fakes answer in a fraction of a millisecond, so
 * sharing one event loop costs the load generator little, while each process more cost the two
 * cores a pipe write and a wake-up per turn: apart, the harness took 0.78–0.93 ms of CPU per
 * turn, together 0.56–0.59 ms, CPU the service shares the cores with.
 */
export type Fakes = {
  telegramApiRoot: string;
  telegramToken: string;
  geminiBaseUrl: string;
  /** Hears every reported Bot API call (see REPORTED_METHODS); returns the unsubscribe. */
  onArrival(listener: (arrival: TelegramArrival) => void): () => void;
  /** The next arrival of `method` from now on: call it before causing the call. */
  nextArrival(method: string, timeoutMs: number): Promise<TelegramArrival>;
  /** What the fakes saw since the previous call. */
  stats(): FakesStats;
  /** The fakes themselves; their records are kept only with `keepRecords`. */
  telegram: FakeTelegram;
  gemini: FakeGemini;
  close(): Promise<void>;
};

/** Bot API methods whose arrival is reported (the answer, a voice note, and "ready"). */
const REPORTED_METHODS: ReadonlySet<string> = new Set(["sendmessage", "sendvoice", "setwebhook"]);
const BOT_API_PATH = /^\/bot[^/]+\/([A-Za-z]+)$/;
const REQUEST_START = "http.server.request.start";
const RESPONSE_FINISH = "http.server.response.finish";

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function requestOf(message: unknown): IncomingMessage | undefined {
  if (typeof message !== "object" || message === null || !("request" in message)) return undefined;
  return message.request instanceof IncomingMessage ? message.request : undefined;
}

function responseOf(message: unknown): ServerResponse | undefined {
  if (typeof message !== "object" || message === null || !("response" in message)) return undefined;
  return message.response instanceof ServerResponse ? message.response : undefined;
}

function readBody(raw: string): { chatId: number | undefined; text: string | undefined } {
  try {
    const body: unknown = JSON.parse(raw);
    if (typeof body !== "object" || body === null) return { chatId: undefined, text: undefined };
    const chatId = "chat_id" in body ? Number(body.chat_id) : Number.NaN;
    const text = "text" in body && typeof body.text === "string" ? body.text : undefined;
    return { chatId: Number.isSafeInteger(chatId) ? chatId : undefined, text };
  } catch {
    return chatOfMultipart(raw);
  }
}

/** A multipart upload's (sendVoice's) chat_id field; it has no text. */
function chatOfMultipart(raw: string): { chatId: number | undefined; text: undefined } {
  const chatId = Number(/name="?chat_id"?\r\n(?:[^\r\n]*\r\n)*?\r\n(-?\d+)/.exec(raw)?.[1]);
  return { chatId: Number.isSafeInteger(chatId) ? chatId : undefined, text: undefined };
}

const portOf = (baseUrl: string) => Number(new URL(baseUrl).port);

export async function startFakes(
  options: { gemini?: FakeGeminiOptions; keepRecords?: boolean } = {},
): Promise<Fakes> {
  const [telegram, gemini] = await Promise.all([
    startFakeTelegram(),
    startFakeGemini(options.gemini),
  ]);
  const telegramPort = portOf(telegram.apiRoot);
  const geminiPort = portOf(gemini.baseUrl);
  const listeners = new Set<(arrival: TelegramArrival) => void>();
  const geminiStarts = new WeakMap<IncomingMessage, number>();
  const arrivals = new WeakMap<IncomingMessage, TelegramArrival>();
  let geminiMs: number[] = [];
  let sendMessages = 0;
  let telegram429s = 0;

  const report = (request: IncomingMessage, method: string, at: number) => {
    const chunks: Buffer[] = [];
    // The fake reads the body with its own async iterator; a 'data' listener added before that
    // sees every chunk those reads pull, without changing what the fake gets.
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      if (method.toLowerCase() === "sendmessage") sendMessages++;
      // Nothing reads the fake's records back; thousands of turns of them would burden the GC.
      if (!options.keepRecords) telegram.forgetCalls();
      const arrival: TelegramArrival = {
        method,
        at,
        ...readBody(Buffer.concat(chunks).toString("utf8")),
      };
      arrivals.set(request, arrival);
      for (const listener of listeners) listener(arrival);
    });
  };

  // The channels hear every HTTP server of this process; the port tells the fakes apart.
  const onRequestStart = (message: unknown) => {
    const request = requestOf(message);
    const port = request?.socket.localPort;
    if (!request || (port !== telegramPort && port !== geminiPort)) return;
    const at = performance.now();
    if (port === geminiPort) {
      geminiStarts.set(request, at);
      return;
    }
    const method = BOT_API_PATH.exec(request.url ?? "")?.[1];
    if (method && REPORTED_METHODS.has(method.toLowerCase())) report(request, method, at);
  };
  const onResponseFinish = (message: unknown) => {
    const request = requestOf(message);
    if (request?.socket.localPort === telegramPort) {
      const arrival = arrivals.get(request);
      if (arrival) arrival.repliedAt = performance.now();
      if (responseOf(message)?.statusCode === 429) telegram429s++;
      return;
    }
    const started = request && geminiStarts.get(request);
    if (started === undefined) return;
    geminiMs.push(performance.now() - started);
    // The fake keeps every request body for tests to inspect; over thousands of turns that is
    // every history ever sent, which would make the GC part of the measurement.
    if (!options.keepRecords) gemini.requests.length = 0;
  };
  subscribe(REQUEST_START, onRequestStart);
  subscribe(RESPONSE_FINISH, onResponseFinish);

  const onArrival = (listener: (arrival: TelegramArrival) => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };

  return {
    telegram,
    gemini,
    telegramApiRoot: telegram.apiRoot,
    telegramToken: telegram.token,
    geminiBaseUrl: gemini.baseUrl,
    onArrival,
    nextArrival(method, timeoutMs) {
      let stop = () => {};
      const arrived = new Promise<TelegramArrival>((resolve) => {
        stop = onArrival((arrival) => {
          if (arrival.method.toLowerCase() === method.toLowerCase()) resolve(arrival);
        });
      });
      return withTimeout(arrived, timeoutMs, `a ${method} call reaching the fake Telegram`).finally(
        stop,
      );
    },
    stats() {
      const stats = {
        geminiMs,
        totals: { geminiRejections: gemini.rejections.length, sendMessages, telegram429s },
      };
      geminiMs = [];
      return stats;
    },
    async close() {
      unsubscribe(REQUEST_START, onRequestStart);
      unsubscribe(RESPONSE_FINISH, onResponseFinish);
      await Promise.all([telegram.close(), gemini.close()]);
    },
  };
}
