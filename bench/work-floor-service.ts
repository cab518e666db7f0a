/**
 * The library floor (bench/floor-service.ts) doing by hand the work every Koroku turn does, with
 * nothing of Koroku's code, to set Koroku's CPU a turn against what that work costs on the same
 * libraries. Per turn, on SQLite or PostgreSQL (bench/work-floor-storage.ts):
 *
 * - the update is stored before the webhook is answered, claimed, and marked finished;
 * - the chat's history is read and sent, the user's and the model's events are stored with a
 *   full-text index, and the token usage;
 * - Gemini gets Koroku's own system instruction, tools and settings (the request the load bench
 *   captured from Koroku's run, WORK_FLOOR_REQUEST), with Koroku's time stamp on the message;
 * - "typing…" after 300 ms and every 4 s after, until the first draft shows; streamed answers
 *   are shown as drafts, at most every 250 ms and 30 a second over all answers;
 * - the answer is sent, and its message id recorded the moment Telegram accepts it, on a thread
 *   of its own (bench/work-floor-courier.ts), as Koroku's courier does (decision 0006);
 * - both events are embedded for recall, 64 at a time, and their vectors stored.
 *
 * Left out: rendering Markdown, the allowlist, the profile and /voice reads, compaction, a durable
 * embedding queue (this one is in memory), drafts and files through the courier, and every
 * failure path.
 * Like the library floor, the answer runs inside grammY's middleware and reads `chunk.text`.
 */

import { readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";
import type { Content, GenerateContentConfig } from "@google/genai";
import { messageTimeFormat, sentAtNote } from "../src/agent/prompts.js";
import { floorClients, floorEnv, serveFloorWebhook } from "./floor-parts.js";
import type { FloorDelivered, FloorDelivery } from "./work-floor-courier.js";
import { openFloorStorage } from "./work-floor-storage.js";

/** Koroku's request without its contents: system instruction, tools and settings. */
type RequestShape = {
  systemInstruction?: Content;
  tools?: GenerateContentConfig["tools"];
  toolConfig?: GenerateContentConfig["toolConfig"];
  generationConfig?: Record<string, unknown>;
};
const shape = JSON.parse(readFileSync(floorEnv("WORK_FLOOR_REQUEST"), "utf8")) as RequestShape;
const config: GenerateContentConfig = {
  ...shape.generationConfig,
  ...(shape.systemInstruction ? { systemInstruction: shape.systemInstruction } : {}),
  ...(shape.tools ? { tools: shape.tools } : {}),
  ...(shape.toolConfig ? { toolConfig: shape.toolConfig } : {}),
};

const storage = await openFloorStorage(floorEnv("WORK_FLOOR_DATABASE"));

const { bot, gemini, model } = floorClients();

const courier = new Worker(new URL("./work-floor-courier.js", import.meta.url), {
  workerData: floorEnv("WORK_FLOOR_DATABASE"),
});
const sendMessageUrl = `${floorEnv("TELEGRAM_API_ROOT")}/bot${floorEnv("TELEGRAM_BOT_TOKEN")}/sendMessage`;
const waiting = new Map<number, (delivered: FloorDelivered) => void>();
let deliveries = 0;
courier.on("message", (delivered: FloorDelivered) => {
  waiting.get(delivered.id)?.(delivered);
  waiting.delete(delivered.id);
});
// A courier that died answers no more: what waits on it fails, and the floor with it.
courier.on("error", (error) => {
  for (const [id, answer] of waiting) answer({ id, error: String(error) });
  waiting.clear();
  throw error;
});
function deliver(chatId: number, text: string, updateId: number): Promise<FloorDelivered> {
  const id = ++deliveries;
  const body = JSON.stringify({ chat_id: chatId, text, parse_mode: "HTML" });
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    courier.postMessage({ id, url: sendMessageUrl, body, updateId } satisfies FloorDelivery);
  });
}
const stamp = messageTimeFormat("UTC");

/** Answers being written at once: their drafts share 30 a second, as Koroku's do. */
let streaming = 0;

const toEmbed: { id: number; text: string }[] = [];
let embedding = false;
async function embedPending(): Promise<void> {
  if (embedding) return;
  embedding = true;
  try {
    while (toEmbed.length > 0) {
      const batch = toEmbed.splice(0, 64);
      const response = await gemini.models.embedContent({
        model: "gemini-embedding-001",
        contents: batch.map((e) => e.text),
        config: { taskType: "RETRIEVAL_DOCUMENT", outputDimensionality: 256 },
      });
      const vectors = (response.embeddings ?? []).map((e) => Float32Array.from(e.values ?? []));
      await storage.storeVectors(
        batch.map((e) => e.id),
        vectors,
      );
    }
  } finally {
    embedding = false;
  }
}
setInterval(() => embedPending().catch((error: unknown) => console.error(error)), 2_000).unref();

async function appended(chatId: number, content: Content, text: string): Promise<void> {
  const id = await storage.append(chatId, JSON.stringify(content), text);
  toEmbed.push({ id, text });
  if (toEmbed.length >= 64) embedPending().catch((error: unknown) => console.error(error));
}

bot.on("message:text", async (ctx) => {
  const updateId = ctx.update.update_id;
  await storage.claim(updateId);
  const chatId = ctx.chat.id;
  const contents = (await storage.history(chatId)).map((body) => JSON.parse(body) as Content);
  const user: Content = {
    role: "user",
    parts: [
      { text: sentAtNote(stamp.format(ctx.message.date * 1000)) },
      { text: ctx.message.text },
    ],
  };
  await appended(chatId, user, ctx.message.text);
  contents.push(user);
  const sendTyping = () => {
    ctx.api.sendChatAction(chatId, "typing").catch(() => {});
  };
  let typingAgain: NodeJS.Timeout | undefined;
  const typing = setTimeout(() => {
    sendTyping();
    typingAgain = setInterval(sendTyping, 4_000);
  }, 300);
  const stopTyping = () => {
    clearTimeout(typing);
    clearInterval(typingAgain);
  };
  let answer = "";
  let input = 0;
  let output = 0;
  let lastDraft = 0;
  streaming++;
  try {
    const stream = await gemini.models.generateContentStream({ model, contents, config });
    for await (const chunk of stream) {
      answer += chunk.text ?? "";
      input = chunk.usageMetadata?.promptTokenCount ?? input;
      output = chunk.usageMetadata?.candidatesTokenCount ?? output;
      const spacing = Math.max(250, (streaming * 1_000) / 30);
      if (Date.now() - lastDraft >= spacing && chunk.candidates?.[0]?.finishReason === undefined) {
        lastDraft = Date.now();
        // The draft says more than "typing…", as Koroku's does.
        stopTyping();
        ctx.api.sendMessageDraft(chatId, 1, answer).catch(() => {});
      }
    }
  } finally {
    streaming--;
    stopTyping();
  }
  await appended(chatId, { role: "model", parts: [{ text: answer }] }, answer);
  await storage.used(chatId, input, output);
  const sent = await deliver(chatId, answer, updateId);
  // Unsent, the update stays unfinished, as it did when the main thread sent.
  if (sent.error !== undefined) throw new Error(sent.error);
  await storage.finish(updateId);
});

await serveFloorWebhook(bot, {
  accept: (body, update) => storage.store(update.update_id, update.message?.chat.id ?? 0, body),
  // After the event loop's I/O, as Koroku's dispatcher claims.
  handle: (update) =>
    new Promise((resolve) => setImmediate(resolve)).then(() => bot.handleUpdate(update)),
});
