import { describe, expect, it } from "vitest";
import { STREAM_CUT_NOTE } from "../../src/agent/finish-reasons.js";
import { streamed, text } from "../fakes/gemini.js";
import { botPerFile, runPrivateMessage } from "../helpers/bot.js";
import { DATABASE_KINDS } from "../helpers/databases.js";

const USER = 3636;
const ANSWER = "All of this was meant to arrive, and only the start of it did.";

describe.each(DATABASE_KINDS)("an answer whose stream was cut, in Telegram, on %s", (kind) => {
  const w = botPerFile({ kind, user: USER, harness: { gemini: { stream: { chunkChars: 8 } } } });
  let updateId = 0;

  const send = async (words: string): Promise<string[]> => {
    const before = w.telegram.sent.length;
    const command = /^\/\w+/.exec(words)?.[0];
    const entities = command
      ? [{ type: "bot_command" as const, offset: 0, length: command.length }]
      : [];
    await runPrivateMessage(
      w.bot,
      { update: ++updateId, chat: USER, user: USER },
      { text: words, entities },
    );
    return w.telegram.sent.slice(before).map((m) => m.plain_text);
  };

  it("says the answer was cut, and /history marks it so", async () => {
    w.h.fake.script(streamed(text(ANSWER), { endAfter: 2 }));
    const arrived = ANSWER.slice(0, 16).trimEnd();
    expect(await send("tell me")).toEqual([`${arrived}\n\n${STREAM_CUT_NOTE}`]);
    expect(await send("/history")).toEqual([`You: tell me\nKoroku: ${arrived} (cut off)`]);
  });
});
