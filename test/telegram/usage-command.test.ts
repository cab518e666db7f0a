import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRICES } from "../../src/usage/prices.js";
import { text } from "../fakes/gemini.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { botOnHarness } from "../helpers/bot.js";
import { type Harness, startHarness } from "../helpers/harness.js";

const USER = 6060;
const MODEL = "gemini-3.6-flash";

describe("/usage", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  let updateId = 0;
  const say = async (words: string) => {
    const { bot } = botOnHarness(h, telegram, {
      allowedUserIds: [USER],
      settings: { model: MODEL, maxEvents: 0, maxTokens: 0 },
    });
    updateId++;
    await bot.handleUpdate(
      buildTextUpdate({ updateId, messageId: updateId, text: words, userId: USER }),
    );
    await h.app.usageRecorder.flush();
    return telegram.sent.at(-1)?.plain_text ?? "";
  };

  beforeAll(async () => {
    h = await startHarness({ env: { GEMINI_MODEL: MODEL } });
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  it("says nothing was used before the first turn", async () => {
    const reply = await say("/usage");
    expect(reply).toContain("Today: 0 prompt (0 cached), 0 output tokens, ≈ $0");
  });

  it("sums today's and this month's calls, cached tokens apart, and prices them", async () => {
    h.fake.script({
      ...text("hello"),
      usage: {
        promptTokenCount: 200_000,
        cachedContentTokenCount: 150_000,
        candidatesTokenCount: 10_000,
      },
    });
    await say("hi");
    // Last month's call counts in neither period.
    await h.app.usage.record(
      String(USER),
      MODEL,
      { promptTokens: 1_000_000, cachedTokens: 0, outputTokens: 0, thoughtsTokens: 0 },
      new Date(new Date().getFullYear(), new Date().getMonth(), 0, 12),
    );
    const reply = await say("/usage");
    const price = PRICES[MODEL];
    if (!price) throw new Error(`no price for ${MODEL}`);
    const cost = (50_000 * price.input + 150_000 * price.cachedInput + 10_000 * price.output) / 1e6;
    const line = `200,000 prompt (150,000 cached), 10,000 output tokens, ≈ $${cost.toFixed(2)}`;
    expect(reply).toContain(`Today: ${line}`);
    expect(reply).toContain(`This month: ${line}`);
  });

  it("counts a model without a price, and says it has none", async () => {
    await h.app.usage.record(
      String(USER),
      "some-new-model",
      { promptTokens: 10, cachedTokens: 0, outputTokens: 5, thoughtsTokens: 0 },
      new Date(),
    );
    const reply = await say("/usage");
    expect(reply).toContain("200,010 prompt");
    expect(reply).toContain("(no price for some-new-model)");
  });
});
