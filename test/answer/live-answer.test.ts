import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery, type Delivery } from "../../src/answer/delivery.js";
import {
  type LiveAnswer,
  type LiveAnswerDeps,
  startLiveAnswer,
} from "../../src/answer/live-answer.js";
import { createLivePacer } from "../../src/answer/live-pacer.js";
import { renderMarkdown } from "../../src/render/markdown-html.js";
import {
  type FakeTelegram,
  MESSAGE_NOT_MODIFIED,
  type RecordedCall,
  startFakeTelegram,
  validateTelegramHtml,
} from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import { refusingPort } from "../helpers/refusing-port.js";

/**
 * The live view of an answer against the fake Telegram, through grammY: rich drafts, and the
 * rich final edit in edit mode, with their fallbacks. Each test has chats of its own.
 */

const TABLE = "## Sizes\n\n| name | size |\n|:--|--:|\n| a | 1 |\n| b | 22 |";
const ANSWER = `${TABLE}\n\n\`\`\`ts\nconst x = 1 < 2;\n\`\`\`\n\nCosts $5 and $10.`;

let telegram: FakeTelegram;
let api: Api;
let nextChat = 5_000;
let nextGroup = -1_005_000;

beforeAll(async () => {
  telegram = await startFakeTelegram();
  api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
});
afterAll(() => telegram.close());

function richDelivery(richMessages = true): Delivery {
  return createDelivery({ api, logger: captureLogger().logger, richMessages });
}

function live(
  delivery: Delivery,
  chatId: number,
  more: Partial<
    Pick<
      LiveAnswerDeps,
      | "api"
      | "shownBefore"
      | "recordMessages"
      | "pacer"
      | "editIntervalMs"
      | "draftRefreshMs"
      | "logger"
    >
  > = {},
): LiveAnswer {
  return startLiveAnswer({
    api,
    delivery,
    logger: captureLogger().logger,
    chatId,
    privateChat: chatId > 0,
    mode: "auto",
    draftId: 77,
    draftIntervalMs: 0,
    editIntervalMs: 0,
    ...more,
  });
}

const callsTo = (chatId: number, method?: string) =>
  telegram.calls.filter(
    (c) => Number(c.body.chat_id) === chatId && (method === undefined || c.method === method),
  );
const answered = (chatId: number, method: string) => (c: RecordedCall) =>
  c.method === method && Number(c.body.chat_id) === chatId && c.response !== undefined;
const sentTo = (chatId: number) => telegram.sent.filter((m) => m.chat_id === chatId);

/** Shows the answer so far, and waits until it reached Telegram as a call of `method`. */
async function shows(
  answer: LiveAnswer,
  chatId: number,
  method: string,
  markdown: string,
): Promise<void> {
  const before = callsTo(chatId, method).length;
  answer.progress.text(markdown);
  await telegram.waitFor(
    (c) => answered(chatId, method)(c) && callsTo(chatId, method).indexOf(c) >= before,
    5_000,
  );
}

describe("live answer in a private chat, rich messages on", () => {
  it("drafts rich with the stop button, shows the tool at work, then sends one rich message", async () => {
    const chat = nextChat++;
    const answer = live(richDelivery(), chat);
    await shows(answer, chat, "sendRichMessageDraft", TABLE);
    answer.progress.tool("read_file", { path: "notes.txt" });
    await telegram.waitFor(
      (c) =>
        answered(chat, "sendRichMessageDraft")(c) && JSON.stringify(c.body).includes("notes.txt"),
      5_000,
    );
    answer.progress.text(ANSWER);
    await answer.finish(ANSWER);

    const drafts = telegram.drafts.filter((d) => d.chat_id === chat);
    expect(drafts.length).toBeGreaterThanOrEqual(2);
    expect(drafts.every((d) => d.rich_html !== undefined && d.draft_id === 77)).toBe(true);
    expect(drafts[0]?.rich_html).toContain("<table bordered>");
    expect(drafts[1]?.plain_text).toMatch(/Sizes[\s\S]*Reading notes\.txt…$/);
    expect(callsTo(chat, "sendRichMessageDraft").every((c) => c.body.can_stop === true)).toBe(true);
    expect(callsTo(chat, "sendMessageDraft")).toEqual([]);
    const [message, ...more] = sentTo(chat);
    expect(more).toEqual([]);
    expect(message?.parse_mode).toBe("rich");
    const sentAt = callsTo(chat, "sendRichMessage")[0]?.at ?? 0;
    expect(callsTo(chat, "sendRichMessageDraft").every((c) => c.at <= sentAt)).toBe(true);
  });

  it("a rich draft refused (400) drafts this answer in HTML; the next answer tries rich again", async () => {
    const chat = nextChat++;
    const delivery = richDelivery();
    telegram.failNext("sendRichMessageDraft", {
      error_code: 400,
      description: "Bad Request: can't parse rich message",
    });
    const first = live(delivery, chat);
    await shows(first, chat, "sendMessageDraft", TABLE);
    await shows(first, chat, "sendMessageDraft", ANSWER);
    await first.finish(ANSWER);
    const htmlDrafts = callsTo(chat, "sendMessageDraft");
    expect(htmlDrafts[0]?.body).toMatchObject({ parse_mode: "HTML", can_stop: true, draft_id: 77 });
    expect(validateTelegramHtml(String(htmlDrafts[0]?.body.text)).ok).toBe(true);
    expect(sentTo(chat).map((m) => m.parse_mode)).toEqual(["rich"]);

    const second = live(delivery, chat);
    second.progress.text("again");
    await telegram.waitFor(
      (c) => answered(chat, "sendRichMessageDraft")(c) && c.response?.ok === true,
      5_000,
    );
    await second.finish("again");
    expect(callsTo(chat, "sendRichMessageDraft").map((c) => c.response?.ok)).toEqual([false, true]);
  });

  it("a server without rich drafts (404): HTML drafts, and the process sends HTML from then on", async () => {
    const chat = nextChat++;
    const delivery = richDelivery();
    telegram.failNext("sendRichMessageDraft", { error_code: 404, description: "Not Found" });
    const first = live(delivery, chat);
    await shows(first, chat, "sendMessageDraft", "**bold** start");
    await first.finish("**bold** start and end");
    const second = live(delivery, chat);
    await shows(second, chat, "sendMessageDraft", "**second**");
    await second.finish("**second**");
    expect(callsTo(chat, "sendRichMessageDraft")).toHaveLength(1);
    expect(callsTo(chat, "sendRichMessage")).toEqual([]);
    expect(sentTo(chat).map((m) => [m.parse_mode, m.text])).toEqual([
      ["HTML", "<b>bold</b> start and end"],
      ["HTML", "<b>second</b>"],
    ]);
  });

  it("with rich messages off, drafts and the answer are HTML as before", async () => {
    const chat = nextChat++;
    const answer = live(richDelivery(false), chat);
    await shows(answer, chat, "sendMessageDraft", TABLE);
    await answer.finish(ANSWER);
    expect(callsTo(chat, "sendRichMessageDraft")).toEqual([]);
    expect(sentTo(chat).map((m) => m.parse_mode)).toEqual(["HTML"]);
  });
});

describe("a stream that starts over", () => {
  for (const rich of [true, false]) {
    it(`empties the draft (Telegram shows "Thinking…"), never "(no answer)"; rich messages ${rich ? "on" : "off"}`, async () => {
      const chat = nextChat++;
      const answer = live(richDelivery(rich), chat);
      await shows(answer, chat, rich ? "sendRichMessageDraft" : "sendMessageDraft", "First try");
      const before = callsTo(chat, "sendMessageDraft").length;
      answer.progress.restart();
      await telegram.waitFor(
        (c) =>
          answered(chat, "sendMessageDraft")(c) &&
          callsTo(chat, "sendMessageDraft").indexOf(c) >= before,
        5_000,
      );
      await answer.finish("Second try.");
      expect(callsTo(chat, "sendMessageDraft").at(-1)?.body.text).toBe("");
      expect(
        telegram.drafts.filter((d) => d.chat_id === chat).map((d) => d.plain_text),
      ).not.toContain("(no answer)");
    });
  }
});

describe("a draft that stops growing", () => {
  it("is shown again before Telegram lets it disappear", async () => {
    const chat = nextChat++;
    const answer = live(richDelivery(false), chat, { draftRefreshMs: 50 });
    await shows(answer, chat, "sendMessageDraft", "Let me think");
    await telegram.waitFor(
      (c) => callsTo(chat, "sendMessageDraft").indexOf(c) === 1 && c.response !== undefined,
      5_000,
    );
    await answer.finish("Done.");
    const drafts = callsTo(chat, "sendMessageDraft").map((c) => c.body.text);
    expect(drafts.slice(0, 2)).toEqual(["Let me think", "Let me think"]);
  });

  it("taken by Telegram while the answer closes, keeps nothing of the answer alive", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const chat = nextChat++;
    // As the courier's thread may: Telegram's answer to the draft comes after the answer closed.
    const late = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    late.config.use((prev, method, payload) => prev(method, payload));
    const held = telegram.holdNext("sendMessageDraft");
    /** Runs the answer and gives back only a weak hold on what it was given. */
    const closeWithDraftUnderWay = async () => {
      const logger = captureLogger().logger;
      const answer = live(richDelivery(false), chat, { api: late, logger });
      answer.progress.text("Almost");
      await held.arrived;
      const closing = answer.close();
      held.release();
      await closing;
      return new WeakRef(logger);
    };
    const logger = await closeWithDraftUnderWay();
    expect(callsTo(chat, "sendMessageDraft")[0]?.response).toMatchObject({ ok: true });
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.deref()).toBeUndefined();
  });
});

describe("a draft that fails with a 5xx or on the network", () => {
  const failures: [string, () => Promise<Api>][] = [
    [
      "a 502",
      async () => {
        telegram.failNext("sendRichMessageDraft", { error_code: 502 });
        return api;
      },
    ],
    [
      "a refused connection",
      async () => new Api(telegram.token, { apiRoot: `http://127.0.0.1:${await refusingPort()}` }),
    ],
  ];
  for (const [how, draftApi] of failures) {
    it(`costs only the preview (${how}): the answer is sent once, as a message of its own`, async () => {
      const chat = nextChat++;
      const { logger, lines } = captureLogger();
      const answer = startLiveAnswer({
        api: await draftApi(),
        delivery: richDelivery(),
        logger,
        chatId: chat,
        privateChat: true,
        mode: "auto",
        draftId: 77,
        draftIntervalMs: 0,
      });
      answer.progress.text("All");
      await expect
        .poll(() => lines.filter((l) => l.msg === "could not update the live answer"))
        .toHaveLength(1);
      await answer.finish("All done.");
      // Neither drafted another way nor edited in place: a 5xx is no refusal of drafts.
      expect(callsTo(chat, "sendMessageDraft")).toEqual([]);
      expect(callsTo(chat, "editMessageText")).toEqual([]);
      expect(callsTo(chat, "sendRichMessageDraft").every((c) => c.response?.ok === false)).toBe(
        true,
      );
      expect(sentTo(chat).map((m) => [m.parse_mode, m.plain_text])).toEqual([
        ["rich", "All done."],
      ]);
    });
  }
});

describe("live answer edited in place (a group), rich messages on", () => {
  it("edits in HTML while written; the last edit makes the message the rich answer", async () => {
    const group = nextGroup--;
    const answer = live(richDelivery(), group);
    await shows(answer, group, "sendMessage", "## Si");
    await shows(answer, group, "editMessageText", TABLE);
    await answer.finish(ANSWER);
    const edits = callsTo(group, "editMessageText");
    expect(edits.slice(0, -1).every((c) => c.body.parse_mode === "HTML")).toBe(true);
    expect(edits.at(-1)?.body).toMatchObject({ rich_message: { html: expect.any(String) } });
    const [message, ...more] = sentTo(group);
    expect(more).toEqual([]);
    expect(message?.parse_mode).toBe("rich");
    expect(message?.plain_text).toContain("const x = 1 < 2;");
    expect(callsTo(group, "sendRichMessage")).toEqual([]);
  });

  it("an answer shown in several HTML messages ends as one rich message; the others are deleted", async () => {
    const group = nextGroup--;
    const long = Array.from({ length: 200 }, (_, i) => `Sentence ${i} of a long answer.`).join(" ");
    const answer = live(richDelivery(), group);
    answer.progress.text(long);
    await telegram.waitFor(
      (c) => answered(group, "sendMessage")(c) && callsTo(group, "sendMessage").indexOf(c) === 1,
      5_000,
    );
    await answer.finish(long);
    expect(sentTo(group).map((m) => [m.parse_mode, m.plain_text])).toEqual([["rich", long]]);
    expect(telegram.deleted.filter((d) => d.chat_id === group)).toHaveLength(1);
  });

  it("a rich answer of two messages: the first edited, the second sent rich", async () => {
    const group = nextGroup--;
    const paragraphs = ["first", "second"].map((word) => `${word} `.repeat(4_000).trim());
    const markdown = paragraphs.join("\n\n");
    const answer = live(richDelivery(), group);
    await shows(answer, group, "sendMessage", "beginning");
    await answer.finish(markdown);
    expect(sentTo(group).map((m) => [m.parse_mode, m.plain_text])).toEqual([
      ["rich", paragraphs[0]],
      ["rich", paragraphs[1]],
    ]);
    expect(callsTo(group, "sendRichMessage")).toHaveLength(1);
  });

  it("the rich edit refused: the message is edited into the HTML answer instead", async () => {
    const group = nextGroup--;
    const answer = live(richDelivery(), group);
    await shows(answer, group, "sendMessage", TABLE);
    telegram.failNext("editMessageText", {
      error_code: 400,
      description: "Bad Request: can't parse rich message",
    });
    await answer.finish(ANSWER);
    const [message, ...more] = sentTo(group);
    expect(more).toEqual([]);
    expect(message?.parse_mode).toBe("HTML");
    expect(message?.text).toBe(renderMarkdown(ANSWER));
    expect(
      callsTo(group, "editMessageText").map((c) => [c.response?.ok, "rich_message" in c.body]),
    ).toEqual([
      [false, true],
      [true, false],
    ]);
  });
});

describe("live answer edited in place (a group): what reaches Telegram", () => {
  const editTexts = (group: number) => callsTo(group, "editMessageText").map((c) => c.body.text);

  it("edits come the edit interval apart, and only the newest text waiting goes out", async () => {
    const group = nextGroup--;
    const interval = 400;
    const answer = live(richDelivery(false), group, { editIntervalMs: interval });
    await shows(answer, group, "sendMessage", "one");
    answer.progress.text("one two");
    await shows(answer, group, "editMessageText", "one two three");
    await shows(answer, group, "editMessageText", "one two three four");
    await answer.close();
    expect(editTexts(group)).toEqual(["one two three", "one two three four"]);
    const at = callsTo(group).map((c) => c.at);
    // The interval counts from when a request leaves; the fake notes it when it arrives.
    for (const [i, time] of at.slice(1).entries()) {
      expect(time - (at[i] ?? 0)).toBeGreaterThanOrEqual(interval - 100);
    }
  });

  it("an unchanged text is not sent again, while written nor as the finished answer", async () => {
    const group = nextGroup--;
    const answer = live(richDelivery(false), group);
    await shows(answer, group, "sendMessage", "**same** text");
    answer.progress.text("**same** text");
    await answer.finish("**same** text");
    expect(callsTo(group, "editMessageText")).toEqual([]);
    expect(sentTo(group).map((m) => m.text)).toEqual(["<b>same</b> text"]);
  });

  it('"message is not modified" while written is no failure: nothing logged, the next edit goes out', async () => {
    const group = nextGroup--;
    const { logger, lines } = captureLogger();
    const answer = live(richDelivery(false), group, { logger });
    await shows(answer, group, "sendMessage", "one");
    telegram.failNext("editMessageText", MESSAGE_NOT_MODIFIED);
    await shows(answer, group, "editMessageText", "one two");
    await shows(answer, group, "editMessageText", "one two three");
    await answer.finish("one two three");
    expect(callsTo(group, "editMessageText").map((c) => [c.body.text, c.response?.ok])).toEqual([
      ["one two", false],
      ["one two three", true],
    ]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(sentTo(group).map((m) => m.text)).toEqual(["one two three"]);
  });

  it('"message is not modified" for the last edit: the answer is done, the edit not retried', async () => {
    const group = nextGroup--;
    const { logger, lines } = captureLogger();
    const answer = live(richDelivery(), group, { logger });
    await shows(answer, group, "sendMessage", "the answer");
    telegram.failNext("editMessageText", MESSAGE_NOT_MODIFIED);
    await answer.finish("the answer");
    expect(callsTo(group, "editMessageText").map((c) => c.response?.ok)).toEqual([false]);
    // Not taken for a refused rich message either.
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(callsTo(group, "sendRichMessage")).toEqual([]);
    expect(sentTo(group)).toHaveLength(1);
  });
});

describe("live answer after a crash: the messages an earlier run showed it in", () => {
  const LONG = Array.from({ length: 200 }, (_, i) => `Sentence ${i} of a long answer.`).join(" ");

  it("are recorded as they are sent, and a later run edits them instead of sending the answer again", async () => {
    const group = nextGroup--;
    const recorded: number[][] = [];
    const recordMessages = async (ids: readonly number[]) => void recorded.push([...ids]);
    const dead = live(richDelivery(), group, { recordMessages });
    dead.progress.text(LONG);
    await telegram.waitFor(
      (c) => answered(group, "sendMessage")(c) && callsTo(group, "sendMessage").indexOf(c) === 1,
      5_000,
    );
    await dead.close();
    const ids = sentTo(group).map((m) => m.message_id);
    expect(ids).toHaveLength(2);
    expect(recorded).toEqual([ids.slice(0, 1), ids]);

    // The next run writes a shorter answer: the first message becomes it, the second goes.
    recorded.length = 0;
    const next = live(richDelivery(), group, { shownBefore: ids, recordMessages });
    await next.finish(ANSWER);
    expect(sentTo(group).map((m) => [m.message_id, m.parse_mode])).toEqual([[ids[0], "rich"]]);
    expect(telegram.deleted.filter((d) => d.chat_id === group)).toEqual([
      { chat_id: group, message_id: ids[1] },
    ]);
    expect(recorded).toEqual([ids.slice(0, 1)]);
    expect(callsTo(group, "sendRichMessage")).toEqual([]);
  });

  it("a run that resumes the stored answer in a private chat edits the message too, not a draft", async () => {
    const chat = nextChat++;
    const first = await api.sendMessage(chat, "partial");
    const answer = live(richDelivery(), chat, { shownBefore: [first.message_id] });
    await answer.finish(ANSWER);
    expect(sentTo(chat).map((m) => [m.message_id, m.parse_mode])).toEqual([
      [first.message_id, "rich"],
    ]);
    expect(callsTo(chat, "sendRichMessageDraft")).toEqual([]);
  });

  it("one the user deleted meanwhile is sent anew, and recorded", async () => {
    const group = nextGroup--;
    const first = await api.sendMessage(group, "partial");
    await api.deleteMessage(group, first.message_id);
    const recorded: number[][] = [];
    const answer = live(richDelivery(false), group, {
      shownBefore: [first.message_id],
      recordMessages: async (ids) => void recorded.push([...ids]),
    });
    await answer.finish("the **answer**");
    const [message, ...more] = sentTo(group);
    expect(more).toEqual([]);
    expect(message?.text).toBe("the <b>answer</b>");
    expect(recorded).toEqual([[message?.message_id]]);
  });
});

describe("live updates of answers written at once", () => {
  it("an answer's drafts come the shared spacing apart, and closing gives its share back", async () => {
    const pacer = createLivePacer(4);
    const [chat, other] = [nextChat++, nextChat++];
    const answers = [
      live(richDelivery(false), chat, { pacer }),
      live(richDelivery(false), other, { pacer }),
    ];
    expect(pacer.spacingMs()).toBe(500);
    await shows(answers[0] as LiveAnswer, chat, "sendMessageDraft", "one");
    await shows(answers[1] as LiveAnswer, other, "sendMessageDraft", "first");
    await shows(answers[0] as LiveAnswer, chat, "sendMessageDraft", "one two");
    const [a, b] = callsTo(chat, "sendMessageDraft");
    // Times the fake saw them at: on a busy host the first can arrive late (CI saw 493 ms), so
    // the slack tells 500 ms apart from no spacing, not from 495.
    expect((b?.at ?? 0) - (a?.at ?? 0)).toBeGreaterThanOrEqual(400);
    for (const answer of answers) await answer.close();
    expect(pacer.spacingMs()).toBe(0);
  });
});

describe("live answer with work after its words (a voice note being made)", () => {
  const RECORDING = "🎙 recording…";
  /** Calls of `method` to `chat` that Telegram answered, as they arrived. */
  const answeredCalls = (chat: number, method: string) =>
    callsTo(chat, method).filter((c) => c.response !== undefined);
  const statusDraftCalls = (chat: number) =>
    answeredCalls(chat, "sendMessageDraft").filter((c) => c.body.text === `<i>${RECORDING}</i>`);

  it("drafts the status after the answer's message; each message sent takes its place, none follows the last", async () => {
    const chat = nextChat++;
    const delivery = richDelivery(false);
    const answer = live(delivery, chat);
    await shows(answer, chat, "sendMessageDraft", "The ans");
    let showing: boolean | undefined;
    await answer.finish("The answer.", undefined, {
      status: RECORDING,
      async run(view) {
        showing = view.showing;
        await expect.poll(() => statusDraftCalls(chat).length).toBe(1);
        await view.quiet();
        await delivery.sendHtml(chat, "note 1");
        view.again();
        await expect.poll(() => statusDraftCalls(chat).length).toBe(2);
        view.again();
        await view.quiet();
        await delivery.sendHtml(chat, "note 2");
      },
    });
    expect(showing).toBe(true);
    expect(sentTo(chat).map((m) => m.plain_text)).toEqual(["The answer.", "note 1", "note 2"]);
    const [answerAt, note1At, note2At] = answeredCalls(chat, "sendMessage").map((c) => c.at);
    const [first, second, ...more] = statusDraftCalls(chat);
    expect(more).toEqual([]);
    expect(first?.at).toBeGreaterThanOrEqual(answerAt ?? Infinity);
    expect(first?.at).toBeLessThanOrEqual(note1At ?? 0);
    expect(second?.at).toBeGreaterThanOrEqual(note1At ?? Infinity);
    // Nothing drafted after the last message: no status left showing below it.
    expect(callsTo(chat, "sendMessageDraft").every((c) => c.at <= (note2At ?? 0))).toBe(true);
    // The draft of the answer's own id, with its stop button: a press stops the work.
    expect(statusDraftCalls(chat).every((c) => c.body.draft_id === 77 && c.body.can_stop)).toBe(
      true,
    );
  });

  it("in a message edited in place: the status below the words while the work runs, then the answer alone", async () => {
    const group = nextGroup--;
    const answer = live(richDelivery(), group);
    await shows(answer, group, "sendMessage", "The ans");
    const during: string[] = [];
    await answer.finish("The **answer**.", undefined, {
      status: RECORDING,
      async run(view) {
        expect(view.showing).toBe(true);
        during.push(...sentTo(group).map((m) => m.plain_text));
      },
    });
    expect(during).toEqual([`The answer.\n\n${RECORDING}`]);
    const [message, ...more] = sentTo(group);
    expect(more).toEqual([]);
    expect([message?.parse_mode, message?.plain_text]).toEqual(["rich", "The answer."]);
  });

  it("in a group whose answer came whole: one message, with the status until the work ends", async () => {
    const group = nextGroup--;
    const answer = live(richDelivery(false), group);
    const during: string[] = [];
    await answer.finish("Whole answer.", undefined, {
      status: RECORDING,
      async run() {
        during.push(...sentTo(group).map((m) => m.plain_text));
      },
    });
    expect(during).toEqual([`Whole answer.\n\n${RECORDING}`]);
    expect(sentTo(group).map((m) => m.plain_text)).toEqual(["Whole answer."]);
    expect(callsTo(group, "sendMessage")).toHaveLength(1);
  });

  it("not shown live (STREAMING=off): the answer first, then the work, told nothing shows it", async () => {
    const chat = nextChat++;
    const answer = startLiveAnswer({
      api,
      delivery: richDelivery(false),
      logger: captureLogger().logger,
      chatId: chat,
      privateChat: true,
      mode: "off",
      draftId: 77,
    });
    const seen: { showing: boolean; sent: string[] }[] = [];
    await answer.finish("Plain.", undefined, {
      status: RECORDING,
      async run(view) {
        view.again();
        seen.push({ showing: view.showing, sent: sentTo(chat).map((m) => m.plain_text) });
      },
    });
    expect(seen).toEqual([{ showing: false, sent: ["Plain."] }]);
    expect(callsTo(chat, "sendMessageDraft")).toEqual([]);
  });
});
