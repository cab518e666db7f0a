import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamed, text } from "../fakes/gemini.js";
import { validateRichHtml, validateTelegramHtml } from "../fakes/telegram.js";
import { longMarkdownAnswer, manyBlocksAnswer } from "../helpers/answers.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

/**
 * RICH_MESSAGES=true end to end: answers go out with sendRichMessage, and when Telegram refuses
 * one, as HTML, then as plain text; a long answer interrupted resumes with its unsent messages.
 */

const QUESTION = "what is the answer?";
const TABLE_AND_CODE = [
  "## Sizes",
  "| name | size |",
  "|:--|--:|",
  "| a | 1 |",
  "| b | 22 |",
  "",
  "```ts",
  "const x = 1 < 2;",
  "```",
  "",
  "Costs $5 and $10, a==b, x || y, <div>literal</div>.",
].join("\n");

const GROUP = -4_000_002;

let w: ServiceWorld;
let nextUser = ALLOWED_USER;

beforeAll(async () => {
  w = await startWorld({ env: { RICH_MESSAGES: "true", ALLOWED_USER_IDS: allowedUsers() } });
});

afterAll(async () => {
  await w?.close();
});

function allowedUsers(): string {
  return Array.from({ length: 10 }, (_, i) => ALLOWED_USER + i).join(",");
}

const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
/** The kinds of block Telegram reads in a rich message's HTML; undefined when it refuses it. */
function blockTypes(html: string | undefined): string[] | undefined {
  const parsed = validateRichHtml(html ?? "");
  return parsed.ok ? parsed.blocks.map((block) => block.type) : undefined;
}

const callsTo = (chatId: number, method: string) =>
  w.telegram.calls.filter((c) => c.method === method && c.body.chat_id === chatId);

describe("rich messages end to end (RICH_MESSAGES=true)", () => {
  it("sends an answer with a table and code as one valid rich message", async () => {
    const user = nextUser++;
    w.gemini.script(text(TABLE_AND_CODE));
    await w.say(QUESTION, { userId: user });
    const [message] = await eventually(() => sentTo(user).length === 1 && sentTo(user));
    expect(message?.parse_mode).toBe("rich");
    expect(blockTypes(message?.text)).toEqual(["heading", "table", "pre", "paragraph"]);
    expect(message?.plain_text).toContain("Costs $5 and $10, a==b, x || y, <div>literal</div>.");
    expect(callsTo(user, "sendMessage")).toEqual([]);
  });

  it("streams a 10,000-character answer as rich drafts, then sends it as one rich message within the limits", async () => {
    const user = nextUser++;
    const answer = longMarkdownAnswer();
    w.gemini.script(streamed(text(answer), { chunkChars: 500, chunkDelayMs: 40 }));
    const updateId = await w.say(QUESTION, { userId: user });
    const [message] = await eventually(() => sentTo(user).length === 1 && sentTo(user));
    const drafts = callsTo(user, "sendRichMessageDraft");
    expect(drafts.length).toBeGreaterThan(1);
    expect(drafts.every((c) => c.response?.ok && c.body.can_stop === true)).toBe(true);
    expect(new Set(drafts.map((c) => c.body.draft_id))).toEqual(new Set([updateId]));
    expect(callsTo(user, "sendMessageDraft")).toEqual([]);
    // Tables and code render while the answer grows.
    expect(drafts.some((c) => JSON.stringify(c.body).includes("<table bordered>"))).toBe(true);
    expect(message?.parse_mode).toBe("rich");
    const types = blockTypes(message?.text);
    expect(types).toContain("table");
    expect(types).toContain("pre");
    expect(types?.[0]).toBe("heading");
    const sentAt = callsTo(user, "sendRichMessage")[0]?.at ?? 0;
    expect(drafts.every((c) => c.at <= sentAt)).toBe(true);
  });

  it("sends a 40,000-character answer of many blocks as two rich messages, both accepted", async () => {
    const user = nextUser++;
    const answer = manyBlocksAnswer(40_000);
    w.gemini.script(text(answer));
    await w.say(QUESTION, { userId: user });
    const messages = await eventually(() => sentTo(user).length === 2 && sentTo(user));
    // Counted without the line breaks between blocks, the first was refused and all went as HTML.
    expect(callsTo(user, "sendRichMessage").map((c) => c.response?.ok)).toEqual([true, true]);
    expect(callsTo(user, "sendMessage")).toEqual([]);
    expect(messages.map((m) => m.parse_mode)).toEqual(["rich", "rich"]);
    const shown = messages.map((m) => m.plain_text).join("\n");
    expect(shown.match(/Sentence \d+ of section \d+/g)).toEqual(
      answer.match(/Sentence \d+ of section \d+/g),
    );
  });

  it("sends no tg: link, and a link whose text names another address shows its real target", async () => {
    const user = nextUser++;
    w.gemini.script(
      text("[Log in](tg://login?token=AQID) or [https://bank.example](https://evil.example/login)"),
    );
    await w.say(QUESTION, { userId: user });
    const [message] = await eventually(() => sentTo(user).length === 1 && sentTo(user));
    const parsed = validateRichHtml(message?.text ?? "");
    expect(parsed.ok && parsed.blocks).toEqual([
      {
        type: "paragraph",
        text: [
          "Log in or https://bank.example (",
          { type: "url", text: "https://evil.example/login", url: "https://evil.example/login" },
          ")",
        ],
      },
    ]);
  });

  it("a group: one message edited in HTML as the answer grows, the last edit makes it the rich answer", async () => {
    const user = nextUser++;
    w.gemini.script(streamed(text(TABLE_AND_CODE), { chunkChars: 10, chunkDelayMs: 250 }));
    await w.say(`@${w.telegram.bot.username} ${QUESTION}`, { userId: user, chatId: GROUP });
    await eventually(() => sentTo(GROUP)[0]?.parse_mode === "rich");
    const [message, ...more] = sentTo(GROUP);
    expect(more).toEqual([]);
    const edits = callsTo(GROUP, "editMessageText");
    expect(edits.length).toBeGreaterThan(1);
    expect(edits.slice(0, -1).every((c) => c.body.parse_mode === "HTML")).toBe(true);
    expect(edits.at(-1)?.body.rich_message).toEqual({ html: message?.text });
    expect(blockTypes(message?.text)).toEqual(["heading", "table", "pre", "paragraph"]);
    expect(callsTo(GROUP, "sendRichMessage")).toEqual([]);
    expect(w.telegram.calls.filter((c) => c.response?.ok === false)).toEqual([]);
  });

  it("falls back to HTML when Telegram refuses the rich message, then to plain text", async () => {
    const user = nextUser++;
    w.telegram.failNext("sendRichMessage", {
      error_code: 400,
      description: "Bad Request: can't parse rich message",
    });
    w.telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: can't parse entities: unsupported start tag",
    });
    w.gemini.script(text(TABLE_AND_CODE));
    await w.say(QUESTION, { userId: user });
    const [message] = await eventually(() => sentTo(user).length === 1 && sentTo(user));
    expect(callsTo(user, "sendRichMessage").map((c) => c.response?.ok)).toEqual([false]);
    const sends = callsTo(user, "sendMessage");
    expect(sends.map((c) => [c.body.parse_mode, c.response?.ok])).toEqual([
      ["HTML", false],
      [undefined, true],
    ]);
    expect(validateTelegramHtml(String(sends[0]?.body.text)).ok).toBe(true);
    expect(message?.parse_mode).toBeUndefined();
    for (const words of [
      "Sizes",
      "name",
      "22",
      "const x = 1 < 2;",
      "$5 and $10",
      "<div>literal</div>",
    ]) {
      expect(message?.plain_text).toContain(words);
    }
  });

  it("a long rich answer cut short by Telegram sends only its missing messages when it runs again", async () => {
    const user = nextUser++;
    // 38,000 characters: two rich messages, the first two paragraphs and the third.
    const paragraphs = ["first", "second", "third"].map((word) => `${word} `.repeat(2_000).trim());
    const before = w.gemini.requests.length;
    w.gemini.script(text(paragraphs.join("\n\n")));
    const [first, second] = [
      w.telegram.holdNext("sendRichMessage"),
      w.telegram.holdNext("sendRichMessage"),
    ];
    await w.say(QUESTION, { userId: user });
    await first.arrived;
    first.release();
    await second.arrived;
    // Refused outright (no fallback, no retry for a 403): the update fails after its first message.
    w.telegram.failNext("sendRichMessage", { error_code: 403 });
    second.release();

    await eventually(() => sentTo(user).length === 2, 60_000);
    const words = (texts: string[]) => texts.join(" ").split(/\s+/);
    expect(words(sentTo(user).map((m) => m.plain_text))).toEqual(words(paragraphs));
    expect(callsTo(user, "sendRichMessage").map((c) => c.response?.ok)).toEqual([
      true,
      false,
      true,
    ]);
    expect(callsTo(user, "sendMessage")).toEqual([]);
    expect(w.gemini.requests.length - before).toBe(1);
  });

  // Last: what the service learns here lasts for the rest of its life.
  it("a Bot API server without rich messages costs one refused call, then HTML only", async () => {
    const user = nextUser++;
    w.telegram.failNext("sendRichMessage", { error_code: 404, description: "Not Found" });
    w.gemini.script(text("**first**"), text("**second**"));
    await w.say(QUESTION, { userId: user });
    await eventually(() => sentTo(user).length === 1);
    await w.say(QUESTION, { userId: user });
    const messages = await eventually(() => sentTo(user).length === 2 && sentTo(user));
    expect(messages.map((m) => [m.parse_mode, m.text])).toEqual([
      ["HTML", "<b>first</b>"],
      ["HTML", "<b>second</b>"],
    ]);
    expect(callsTo(user, "sendRichMessage")).toHaveLength(1);
  });
});
