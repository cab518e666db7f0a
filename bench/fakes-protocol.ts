/**
 * What bench/fakes-server.ts (a child process holding the fake Telegram and the fake Gemini) and
 * the benchmark that forked it say to each other over the IPC channel.
 */

/**
 * Milliseconds on a clock that every process on this machine shares: each process's time origin
 * is a wall-clock reading taken at its start, and performance.now() runs on the system's
 * monotonic clock from there. Date.now() would do too, but only to the millisecond.
 */
export const sharedClockMs = (): number => performance.timeOrigin + performance.now();

export type FakesReady = {
  type: "ready";
  telegramApiRoot: string;
  telegramToken: string;
  geminiBaseUrl: string;
};

/** A Bot API call the fake Telegram received, reported when its body has arrived. */
export type TelegramArrival = {
  type: "arrival";
  method: string;
  chatId: number | undefined;
  text: string | undefined;
  /** sharedClockMs() when the request's headers arrived. */
  at: number;
};

/** What the fakes saw since the previous stats request. */
export type FakesStats = {
  type: "stats";
  /** Time each generateContent request spent in the fake Gemini, from arrival to answer sent. */
  geminiMs: number[];
  /** Running totals since the fakes started, unlike geminiMs. */
  totals: {
    /** Requests the fake Gemini refused as invalid: the service sent what Gemini would not take. */
    geminiRejections: number;
    sendMessages: number;
  };
};

export type FakesMessage = FakesReady | TelegramArrival | FakesStats;

export type FakesCommand = { type: "stats" };

/** Bot API methods whose arrival the fakes process reports (the answer, and "ready"). */
export const REPORTED_METHODS: ReadonlySet<string> = new Set(["sendmessage", "setwebhook"]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const TYPES: ReadonlySet<unknown> = new Set(["ready", "arrival", "stats"]);

/** IPC messages are structured clones of what the other side sent; only the type tag is checked. */
export function isFakesMessage(value: unknown): value is FakesMessage {
  return isRecord(value) && TYPES.has(value.type);
}

export function isFakesCommand(value: unknown): value is FakesCommand {
  return isRecord(value) && value.type === "stats";
}
