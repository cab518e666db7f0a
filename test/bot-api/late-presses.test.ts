import { Api, GrammyError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { latePressesAnswered } from "../../src/bot-api/late-presses.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";

const TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid";

describe("a button press answered late", () => {
  let telegram: FakeTelegram;
  let api: Api;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    api.config.use(latePressesAnswered);
  });
  afterAll(() => telegram.close());

  it("counts as answered when Telegram says the press is too old", async () => {
    telegram.failNext("answerCallbackQuery", { error_code: 400, description: TOO_OLD });
    await expect(api.answerCallbackQuery("q1", { text: "Allowed once" })).resolves.toBe(true);
  });

  it("still fails on any other refusal, and for any other method", async () => {
    telegram.failNext("answerCallbackQuery", {
      error_code: 400,
      description: "Bad Request: text is too long",
    });
    await expect(api.answerCallbackQuery("q2", { text: "x" })).rejects.toBeInstanceOf(GrammyError);
    telegram.failNext("sendMessage", { error_code: 400, description: TOO_OLD });
    await expect(api.sendMessage(1, "hi")).rejects.toBeInstanceOf(GrammyError);
  });
});
