/**
 * Child-process entry (forked by bench/fakes-process.ts): the fake Telegram and the fake Gemini,
 * away from the service and from the load generator so that none of the three steals the
 * others' event loop. It reports over IPC when each answer (sendMessage) reaches the fake
 * Telegram, timed on the clock all processes share.
 */
import { subscribe } from "node:diagnostics_channel";
import { IncomingMessage } from "node:http";
import { startFakeGemini } from "../test/fakes/gemini.js";
import { startFakeTelegram } from "../test/fakes/telegram.js";
import {
  type FakesMessage,
  isFakesCommand,
  REPORTED_METHODS,
  sharedClockMs,
} from "./fakes-protocol.js";

const GENERATE_PATH = /:generateContent$/;
const BOT_API_PATH = /^\/bot[^/]+\/([A-Za-z]+)$/;

function requestOf(message: unknown): IncomingMessage | undefined {
  if (typeof message !== "object" || message === null || !("request" in message)) return undefined;
  return message.request instanceof IncomingMessage ? message.request : undefined;
}

function readBody(raw: string): { chatId: number | undefined; text: string | undefined } {
  try {
    const body: unknown = JSON.parse(raw);
    if (typeof body !== "object" || body === null) return { chatId: undefined, text: undefined };
    const chatId = "chat_id" in body ? Number(body.chat_id) : Number.NaN;
    const text = "text" in body && typeof body.text === "string" ? body.text : undefined;
    return { chatId: Number.isSafeInteger(chatId) ? chatId : undefined, text };
  } catch {
    return { chatId: undefined, text: undefined };
  }
}

async function main(): Promise<void> {
  const sendToParent = process.send?.bind(process);
  if (!sendToParent) {
    throw new Error("bench/fakes-server.js reports over IPC: start it with child_process.fork()");
  }
  const send = (message: FakesMessage) => sendToParent(message);
  const telegram = await startFakeTelegram();
  const gemini = await startFakeGemini();
  const geminiStarts = new WeakMap<IncomingMessage, number>();
  let geminiMs: number[] = [];
  let sendMessages = 0;

  const reportWhenRead = (request: IncomingMessage, method: string, at: number) => {
    const chunks: Buffer[] = [];
    // The fake reads the body with its own async iterator; a 'data' listener added before that
    // sees every chunk those reads pull, without changing what the fake gets.
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      if (method.toLowerCase() === "sendmessage") sendMessages++;
      // Bounded like the fake Gemini's requests below: nothing here reads the records back.
      telegram.forgetCalls();
      send({ type: "arrival", method, at, ...readBody(Buffer.concat(chunks).toString("utf8")) });
    });
  };

  // Both fakes' servers live in this process, so these channels see exactly their requests.
  subscribe("http.server.request.start", (message) => {
    const request = requestOf(message);
    if (!request) return;
    const at = sharedClockMs();
    const path = request.url ?? "";
    if (GENERATE_PATH.test(path)) {
      geminiStarts.set(request, at);
      return;
    }
    const method = BOT_API_PATH.exec(path)?.[1];
    if (method && REPORTED_METHODS.has(method.toLowerCase())) reportWhenRead(request, method, at);
  });
  subscribe("http.server.response.finish", (message) => {
    const request = requestOf(message);
    const started = request && geminiStarts.get(request);
    if (started === undefined) return;
    geminiMs.push(sharedClockMs() - started);
    // The fake keeps every request body for tests to inspect; over thousands of turns that is
    // every history ever sent, which would make this process's GC part of the measurement.
    gemini.requests.length = 0;
  });

  process.on("message", (command) => {
    if (!isFakesCommand(command)) return;
    const totals = { geminiRejections: gemini.rejections.length, sendMessages };
    send({ type: "stats", geminiMs, totals });
    geminiMs = [];
  });
  process.once("disconnect", () => {
    Promise.all([telegram.close(), gemini.close()]).finally(() => process.exit(0));
  });
  send({
    type: "ready",
    telegramApiRoot: telegram.apiRoot,
    telegramToken: telegram.token,
    geminiBaseUrl: gemini.baseUrl,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`fakes server failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
