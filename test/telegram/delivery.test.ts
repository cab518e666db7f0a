import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/telegram/delivery.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";

const CHAT = 31337;

describe("delivery of an answer with nothing visible in it", () => {
  let telegram: FakeTelegram;
  let delivery: ReturnType<typeof createDelivery>;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    const api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    delivery = createDelivery({ api, logger: captureLogger().logger });
  });
  afterAll(() => telegram.close());

  it.each([
    ["an empty code block", "```\n   \n```"],
    ["a link without text", "[ ](https://example.com)"],
    ["zero-width characters", "\u200b\u200d"],
    ["nothing", "  \n"],
  ])("tells the user there was no answer for %s", async (_, markdown) => {
    const before = telegram.sent.length;
    await delivery.sendMarkdown(CHAT, markdown);
    expect(telegram.sent.slice(before).map((m) => m.plain_text)).toEqual(["(no answer)"]);
  });
});
