/**
 * The least a Telegram bot on Gemini can do per turn with the libraries Koroku is built on: a
 * webhook through grammY, one streamed generateContent through @google/genai, one sendMessage.
 * No database, no history, no inbox. The load benchmark runs its burst against this process too,
 * so the wait it sets off against the target is the libraries' and the host's, not Koroku's.
 *
 * Run by bench/load.ts with the same environment as the service (serviceEnv).
 */
import { floorClients, serveFloorWebhook } from "./floor-parts.js";

const { bot, gemini, model } = floorClients();

bot.on("message:text", async (ctx) => {
  const stream = await gemini.models.generateContentStream({
    model,
    contents: [{ role: "user", parts: [{ text: ctx.message.text }] }],
  });
  let answer = "";
  for await (const chunk of stream) answer += chunk.text ?? "";
  await ctx.reply(answer, { parse_mode: "HTML" });
});

await serveFloorWebhook(bot, {
  handle: (update) => bot.handleUpdate(update),
});
