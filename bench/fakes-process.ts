import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  type FakesCommand,
  type FakesReady,
  type FakesStats,
  isFakesMessage,
  type TelegramArrival,
} from "./fakes-protocol.js";

export type FakesProcess = {
  telegramApiRoot: string;
  telegramToken: string;
  geminiBaseUrl: string;
  /** Hears every reported Bot API call (see REPORTED_METHODS); returns the unsubscribe. */
  onArrival(listener: (arrival: TelegramArrival) => void): () => void;
  /** The next arrival of `method` from now on: call it before causing the call. */
  nextArrival(method: string, timeoutMs: number): Promise<TelegramArrival>;
  /** What the fakes saw since the previous call. */
  stats(): Promise<FakesStats>;
  close(): Promise<void>;
};

const SERVER = fileURLToPath(new URL("./fakes-server.js", import.meta.url));
const READY_TIMEOUT_MS = 10_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Forks bench/fakes-server.js (the fake Telegram and the fake Gemini) and waits until they listen. */
export async function startFakesProcess(): Promise<FakesProcess> {
  const child = fork(SERVER, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const listeners = new Set<(arrival: TelegramArrival) => void>();
  const statsWaiters: ((stats: FakesStats) => void)[] = [];
  const exited = new Promise<never>((_, reject) => {
    child.once("exit", (code, signal) =>
      reject(new Error(`the fakes process exited (${signal ?? code}); see its output above`)),
    );
  });
  exited.catch(() => {});
  const ready = new Promise<FakesReady>((resolve) => {
    child.on("message", (message) => {
      if (!isFakesMessage(message)) return;
      if (message.type === "ready") resolve(message);
      else if (message.type === "arrival") for (const listener of listeners) listener(message);
      else statsWaiters.shift()?.(message);
    });
  });
  const urls = await withTimeout(
    Promise.race([ready, exited]),
    READY_TIMEOUT_MS,
    "the fakes process starting",
  );

  const onArrival = (listener: (arrival: TelegramArrival) => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };

  return {
    telegramApiRoot: urls.telegramApiRoot,
    telegramToken: urls.telegramToken,
    geminiBaseUrl: urls.geminiBaseUrl,
    onArrival,
    nextArrival(method, timeoutMs) {
      let stop = () => {};
      const arrived = new Promise<TelegramArrival>((resolve) => {
        stop = onArrival((arrival) => {
          if (arrival.method.toLowerCase() === method.toLowerCase()) resolve(arrival);
        });
      });
      return withTimeout(
        Promise.race([arrived, exited]),
        timeoutMs,
        `a ${method} call reaching the fake Telegram`,
      ).finally(stop);
    },
    stats() {
      const answer = new Promise<FakesStats>((resolve) => statsWaiters.push(resolve));
      const command: FakesCommand = { type: "stats" };
      child.send(command);
      return withTimeout(Promise.race([answer, exited]), 5_000, "the fakes answering for stats");
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.disconnect();
      await gone;
    },
  };
}
