import { createServer } from "node:http";
import { GoogleGenAI } from "@google/genai";
import { Bot } from "grammy";
import type { Update } from "grammy/types";

/** A setting the floors need, from the environment bench/load.ts gives them (serviceEnv). */
export function floorEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`floor service: ${name} is not set`);
  return value;
}

/** A floor's bot, Gemini client and model, on the fakes serviceEnv names. */
export function floorClients(): { bot: Bot; gemini: GoogleGenAI; model: string } {
  return {
    bot: new Bot(floorEnv("TELEGRAM_BOT_TOKEN"), {
      client: { apiRoot: floorEnv("TELEGRAM_API_ROOT") },
    }),
    gemini: new GoogleGenAI({
      apiKey: floorEnv("GEMINI_API_KEY"),
      httpOptions: { baseUrl: floorEnv("GEMINI_BASE_URL") },
    }),
    model: floorEnv("GEMINI_MODEL"),
  };
}

/**
 * Starts a floor's bot on its webhook: checks the secret, reads the update, runs `accept` (what
 * must be done before Telegram hears 200), answers, then hands the update to `handle`.
 * Acknowledged at once and handled after, as Koroku's inbox does: grammY's webhookCallback would
 * hold each of Telegram's (and the driver's) 40 connections for the whole turn.
 */
export async function serveFloorWebhook(
  bot: Bot,
  options: {
    accept?(body: string, update: Update): void | Promise<void>;
    handle(update: Update): Promise<unknown>;
  },
): Promise<void> {
  await bot.init();
  const secret = floorEnv("WEBHOOK_SECRET");
  const server = createServer((req, res) => {
    if (req.headers["x-telegram-bot-api-secret-token"] !== secret) {
      res.writeHead(401, { "content-length": "0" }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const update = JSON.parse(body) as Update;
      Promise.resolve(options.accept?.(body, update)).then(
        () => {
          res.writeHead(200, { "content-length": "0" }).end();
          options.handle(update).catch((error: unknown) => console.error(error));
        },
        (error: unknown) => {
          console.error(error);
          res.writeHead(500, { "content-length": "0" }).end();
        },
      );
    });
  });
  server.listen(Number(floorEnv("PORT")), floorEnv("HOST"));
  await bot.api.setWebhook(floorEnv("WEBHOOK_URL"), { secret_token: secret });
  process.once("SIGTERM", () => server.close(() => process.exit(0)));
}
