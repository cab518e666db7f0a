/**
 * The least a Telegram bot on Gemini can do per turn with the libraries Koroku is built on: a
 * webhook through grammY, one streamed generateContent through @google/genai, one sendMessage.
 * No database, no history, no inbox. The load benchmark runs its burst against this process too,
 * so the wait it sets off against the target is the libraries' and the host's, not Koroku's.
 *
 * Run by bench/load.ts with the same environment as the service (serviceEnv).
 */
import { createServer } from "node:http";
import { GoogleGenAI } from "@google/genai";
import { Bot } from "grammy";
import type { Update } from "grammy/types";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`floor service: ${name} is not set`);
  return value;
};

const bot = new Bot(env("TELEGRAM_BOT_TOKEN"), { client: { apiRoot: env("TELEGRAM_API_ROOT") } });
const gemini = new GoogleGenAI({
  apiKey: env("GEMINI_API_KEY"),
  httpOptions: { baseUrl: env("GEMINI_BASE_URL") },
});
const model = env("GEMINI_MODEL");

bot.on("message:text", async (ctx) => {
  const stream = await gemini.models.generateContentStream({
    model,
    contents: [{ role: "user", parts: [{ text: ctx.message.text }] }],
  });
  let answer = "";
  for await (const chunk of stream) answer += chunk.text ?? "";
  await ctx.reply(answer, { parse_mode: "HTML" });
});

await bot.init();
const secret = env("WEBHOOK_SECRET");
// Acknowledged at once and handled after, as Koroku's inbox does: grammY's webhookCallback would
// hold each of Telegram's (and the driver's) 40 connections for the whole turn.
const server = createServer((req, res) => {
  if (req.headers["x-telegram-bot-api-secret-token"] !== secret) {
    res.writeHead(401, { "content-length": "0" }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    res.writeHead(200, { "content-length": "0" }).end();
    const update = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Update;
    bot.handleUpdate(update).catch((error: unknown) => console.error(error));
  });
});
server.listen(Number(env("PORT")), env("HOST"));
await bot.api.setWebhook(env("WEBHOOK_URL"), { secret_token: secret });
process.once("SIGTERM", () => server.close(() => process.exit(0)));
