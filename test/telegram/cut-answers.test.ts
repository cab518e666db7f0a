import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { STREAM_CUT_NOTE } from "../../src/agent/finish-reasons.js";
import { streamed, text } from "../fakes/gemini.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { botOnHarness, runPrivateMessage } from "../helpers/bot.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { CHAT_MODEL, type Harness, startHarness } from "../helpers/harness.js";

const USER = 3636;
const ANSWER = "All of this was meant to arrive, and only the start of it did.";

describe.each(DATABASE_KINDS)("an answer whose stream was cut, in Telegram, on %s", (kind) => {
  let h: Harness;
  let telegram: FakeTelegram;
  let bot: ReturnType<typeof botOnHarness>["bot"];
  let updateId = 0;

  beforeAll(async () => {
    h = await startHarness({ kind, gemini: { stream: { chunkChars: 8 } } });
    telegram = await startFakeTelegram();
    bot = botOnHarness(h, telegram, {
      allowedUserIds: [USER],
      settings: { model: CHAT_MODEL, maxEvents: 0, maxTokens: 0 },
    }).bot;
  });
  afterEach(() => {
    expect(h.fake.rejections).toEqual([]);
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  const send = async (words: string): Promise<string[]> => {
    const before = telegram.sent.length;
    const command = /^\/\w+/.exec(words)?.[0];
    const entities = command
      ? [{ type: "bot_command" as const, offset: 0, length: command.length }]
      : [];
    await runPrivateMessage(
      bot,
      { update: ++updateId, chat: USER, user: USER },
      { text: words, entities },
    );
    return telegram.sent.slice(before).map((m) => m.plain_text);
  };

  it("says the answer was cut, and /history marks it so", async () => {
    h.fake.script(streamed(text(ANSWER), { endAfter: 2 }));
    const arrived = ANSWER.slice(0, 16).trimEnd();
    expect(await send("tell me")).toEqual([`${arrived}\n\n${STREAM_CUT_NOTE}`]);
    expect(await send("/history")).toEqual([`You: tell me\nKoroku: ${arrived} (cut off)`]);
  });
});
