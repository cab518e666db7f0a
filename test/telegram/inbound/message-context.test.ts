import type { Message } from "grammy/types";
import { describe, expect, it } from "vitest";
import {
  modelText,
  QUOTE_MAX_CHARS,
  withoutMention,
} from "../../../src/telegram/inbound/message-context.js";

const BOT = { id: 7000000001, username: "koroku_test_bot" };
const ANN = { id: 11, is_bot: false, first_name: "Ann", last_name: "Lee" };
const PRIVATE = { id: 11, type: "private", first_name: "Ann" } as const;
const GROUP = { id: -1001, type: "supergroup", title: "Crew" } as const;

/** A message as Telegram sends it; the fields each case adds are Telegram's, typed loosely here. */
const message = (fields: Record<string, unknown> & { text: string }) =>
  ({
    message_id: 9,
    date: 1_764_000_000,
    chat: PRIVATE,
    from: ANN,
    ...fields,
  }) as unknown as Message & {
    text: string;
  };

describe("what the model is told about a message", () => {
  it("passes a private message as written", () => {
    expect(modelText(message({ text: "  hi\n  there" }), BOT, false)).toBe("  hi\n  there");
  });

  it("names the speaker in a group and takes the mention out without stray spaces", () => {
    const cases: [string, string][] = [
      ["@koroku_test_bot what now?", "what now?"],
      ["hey @koroku_test_bot there", "hey there"],
      ["@Koroku_Test_Bot, hi", "hi"],
      ["so, @koroku_test_bot?", "so,?"],
      ["first\n@koroku_test_bot second\n    code", "first\nsecond\n    code"],
      ["@koroku_test_bot_other stays", "@koroku_test_bot_other stays"],
    ];
    for (const [text, words] of cases) {
      expect(withoutMention(text, BOT.username), text).toBe(words);
    }
    expect(modelText(message({ chat: GROUP, text: "hey @koroku_test_bot there" }), BOT, true)).toBe(
      "[Ann Lee] hey there",
    );
  });

  it("carries the quoted part of a reply, and says when the reply is to the bot itself", () => {
    const reply = message({
      text: "why?",
      reply_to_message: {
        message_id: 5,
        date: 1,
        chat: PRIVATE,
        from: { id: BOT.id, is_bot: true, first_name: "Koroku", username: BOT.username },
        text: "The meeting moved to Friday. Bring the slides.",
      },
      quote: { text: "moved to Friday", position: 12, is_manual: true },
    });
    expect(modelText(reply, BOT, false)).toBe(
      "[In reply to your own earlier message, quoting: “moved to Friday”]\nwhy?",
    );
  });

  it("quotes the replied-to text or caption, cut short, when nothing is quoted", () => {
    const long = `${"word ".repeat(200)}end`;
    const reply = message({
      text: "agreed",
      reply_to_message: { message_id: 5, date: 1, chat: PRIVATE, from: ANN, text: long },
    });
    const [line] = modelText(reply, BOT, false).split("\n");
    expect(line).toMatch(/^\[In reply to a message from Ann Lee, which said: “word word/);
    expect(line?.length).toBeLessThan(QUOTE_MAX_CHARS + 80);
    const photo = message({
      text: "nice",
      reply_to_message: {
        message_id: 6,
        date: 1,
        chat: PRIVATE,
        from: ANN,
        photo: [{ file_id: "f", file_unique_id: "u", width: 1, height: 1 }],
        caption: "sunset at the pier",
      },
    });
    expect(modelText(photo, BOT, false)).toContain("which said: “sunset at the pier”");
  });

  it("quotes the words of a rich message replied to (Koroku's answers are rich messages)", () => {
    const bot = { id: BOT.id, is_bot: true, first_name: "Koroku", username: BOT.username };
    const reply = message({
      text: "why?",
      reply_to_message: {
        message_id: 5,
        date: 1,
        chat: PRIVATE,
        from: bot,
        rich_message: {
          blocks: [
            { type: "heading", text: "Plan", level: 2 },
            { type: "paragraph", text: ["The meeting ", { type: "bold", text: "moved" }, "."] },
            { type: "list", items: [{ blocks: [{ type: "paragraph", text: "to Friday" }] }] },
          ],
        },
      },
    });
    expect(modelText(reply, BOT, false)).toBe(
      "[In reply to your own earlier message, which said: “Plan The meeting moved. to Friday”]\nwhy?",
    );
  });

  it("names the channel or group a reply's message came from, not the account Telegram sent it by", () => {
    const channelPost = message({
      text: "@koroku_test_bot is this true?",
      chat: GROUP,
      reply_to_message: {
        message_id: 5,
        date: 1,
        chat: GROUP,
        from: { id: 777000, is_bot: false, first_name: "Telegram" },
        sender_chat: { id: -1002, type: "channel", title: "Daily News" },
        text: "Rain tomorrow",
      },
    });
    expect(modelText(channelPost, BOT, true)).toContain(
      "[In reply to a message from Daily News, which said: “Rain tomorrow”]",
    );
  });

  it("does not take a topic's creation for a reply", () => {
    const inTopic = message({
      text: "hello",
      is_topic_message: true,
      message_thread_id: 4,
      reply_to_message: {
        message_id: 4,
        date: 1,
        chat: PRIVATE,
        from: ANN,
        forum_topic_created: { name: "Plans", icon_color: 0x6fb9f0 },
      },
    });
    expect(modelText(inTopic, BOT, false)).toBe("hello");
  });

  it("says where a forward comes from and which bot a message came through", () => {
    const forwarded = (origin: Message["forward_origin"]) =>
      modelText(message({ text: "news", forward_origin: origin }), BOT, false).split("\n")[0];
    expect(forwarded({ type: "user", date: 1_764_000_000, sender_user: ANN })).toBe(
      "[Forwarded from Ann Lee, first sent 2025-11-24]",
    );
    expect(forwarded({ type: "hidden_user", date: 0, sender_user_name: "Bob" })).toContain(
      "Bob (a hidden account)",
    );
    expect(
      forwarded({
        type: "channel",
        date: 0,
        chat: { id: -100, type: "channel", title: "Daily" },
        message_id: 3,
      }),
    ).toContain("the channel “Daily”");
    const via = message({
      text: "a gif",
      via_bot: { id: 5, is_bot: true, first_name: "GIF", username: "gif" },
    });
    expect(modelText(via, BOT, false)).toBe("[Sent via @gif]\na gif");
  });
});
