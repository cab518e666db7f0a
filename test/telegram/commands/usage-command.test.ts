import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { priceOf } from "../../../src/usage/prices.js";
import { periodStarts } from "../../../src/usage/report.js";
import { text } from "../../fakes/gemini.js";
import { promptText } from "../../fakes/gemini-cache.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../../fakes/telegram.js";
import { botOnHarness } from "../../helpers/bot.js";
import { type Harness, startHarness } from "../../helpers/harness.js";

const USER = 6060;
const CACHING_USER = 6061;
const MODEL = "gemini-3.8-flash";

describe("/usage", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  let updateId = 0;
  const say = async (words: string, userId = USER) => {
    const { bot } = botOnHarness(h, telegram, {
      allowedUserIds: [USER, CACHING_USER],
      settings: {
        model: MODEL,
        maxEvents: 0,
        maxTokens: 0,
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      },
    });
    updateId++;
    await bot.run(buildTextUpdate({ updateId, messageId: updateId, text: words, userId }));
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
      {
        promptTokens: 1_000_000,
        cachedTokens: 0,
        outputTokens: 0,
        thoughtsTokens: 0,
        toolUseTokens: 0,
      },
      new Date(new Date().getFullYear(), new Date().getMonth(), 0, 12),
    );
    const reply = await say("/usage");
    const price = priceOf(
      MODEL,
      periodStarts(new Date(), Intl.DateTimeFormat().resolvedOptions().timeZone).month,
    );
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
      { promptTokens: 10, cachedTokens: 0, outputTokens: 5, thoughtsTokens: 0, toolUseTokens: 0 },
      new Date(),
    );
    const reply = await say("/usage");
    expect(reply).toContain("200,010 prompt");
    expect(reply).toContain("(no price for some-new-model)");
  });

  it("shows the prompt tokens Gemini's implicit cache served", async () => {
    const before = h.fake.requests.length;
    // About 6,000 tokens: past the 4,096 the model's cache needs.
    await say(`Please keep this in mind: ${"a long note ".repeat(2_000)}`, CACHING_USER);
    await say("What did I ask you to keep in mind?", CACHING_USER);
    const [first, second] = h.fake.requests.slice(before).map((r) => promptText(r.body));
    let shared = 0;
    while (first?.[shared] !== undefined && first[shared] === second?.[shared]) shared++;
    const cached = Math.ceil(shared / 4);
    expect(cached).toBeGreaterThan(6_000);
    const reply = await say("/usage", CACHING_USER);
    expect(reply).toMatch(
      new RegExp(`Today: [\\d,]+ prompt \\(${cached.toLocaleString("en-US")} cached\\)`),
    );
  });
});
