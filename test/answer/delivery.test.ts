import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/answer/delivery.js";
import { type InboxItem, LeaseLostError } from "../../src/queue/inbox.js";
import { GAVE_UP, tellGaveUp } from "../../src/telegram/conversation.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";

const CHAT = 31337;
const GROUP = -1001234;

describe("delivery to a fake Telegram", () => {
  let telegram: FakeTelegram;
  let delivery: ReturnType<typeof createDelivery>;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    const api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    delivery = createDelivery({ api, logger: captureLogger().logger });
  });
  afterAll(() => telegram.close());

  describe("of an answer with nothing visible in it", () => {
    it.each([
      ["an empty code block", "```\n   \n```"],
      ["zero-width characters", "\u200b\u200d"],
      ["nothing", "  \n"],
    ])("tells the user there was no answer for %s", async (_, markdown) => {
      const before = telegram.sent.length;
      await delivery.sendMarkdown(CHAT, markdown);
      expect(telegram.sent.slice(before).map((m) => m.plain_text)).toEqual(["(no answer)"]);
    });
  });

  it("falls back to plain text, still without a link preview, when Telegram refuses the HTML", async () => {
    await delivery.sendHtml(CHAT, "see <blink>https://example.com</blink>");
    const fallback = telegram.sent.at(-1);
    expect(fallback?.text).toBe("see https://example.com");
    expect(fallback?.body).toMatchObject({ link_preview_options: { is_disabled: true } });
  });

  it("records each message the moment Telegram has it, the last one included", async () => {
    const recorded: { count: number; sentBefore: number }[] = [];
    const before = telegram.sent.length;
    await delivery.sendHtml(CHAT, `${"a ".repeat(3000)}\n\n${"b ".repeat(3000)}`, undefined, {
      alreadySent: 0,
      sent: async (count) => {
        recorded.push({ count, sentBefore: telegram.sent.length - before });
      },
    });
    const messages = telegram.sent.length - before;
    expect(messages).toBeGreaterThan(1);
    expect(recorded).toEqual(
      Array.from({ length: messages }, (_, i) => ({ count: i + 1, sentBefore: i + 1 })),
    );
  });

  it("sends the whole answer when recording a message fails, and stops when the lease is lost", async () => {
    const long = `${"a ".repeat(3000)}\n\n${"b ".repeat(3000)}`;
    const before = telegram.sent.length;
    await delivery.sendHtml(CHAT, long, undefined, {
      alreadySent: 0,
      sent: () => Promise.reject(new Error("Connection terminated unexpectedly")),
    });
    const messages = telegram.sent.length - before;
    expect(messages).toBeGreaterThan(1);

    // Rich messages are recorded under the same rule.
    const rich = createDelivery({
      api: new Api(telegram.token, { apiRoot: telegram.apiRoot }),
      logger: captureLogger().logger,
      richMessages: true,
    });
    const richBefore = telegram.sent.length;
    await rich.sendMarkdown(CHAT, `${"c ".repeat(20000)}\n\n${"d ".repeat(20000)}`, undefined, {
      alreadySent: 0,
      sent: () => Promise.reject(new Error("Connection terminated unexpectedly")),
    });
    expect(
      telegram.sent.slice(richBefore).filter((m) => m.parse_mode === "rich").length,
    ).toBeGreaterThan(1);

    const lostBefore = telegram.sent.length;
    await expect(
      delivery.sendHtml(CHAT, long, undefined, {
        alreadySent: 0,
        sent: () => Promise.reject(new LeaseLostError(1)),
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(telegram.sent.length - lostBefore).toBe(1);
  });

  it("ends the typing indicator's requests when the turn ends", async () => {
    // The same Telegram, watched: what signal each typing request carries.
    const api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    const signals: (AbortSignal | undefined)[] = [];
    api.config.use((prev, method, payload, signal) => {
      if (method === "sendChatAction") signals.push(signal as AbortSignal | undefined);
      return prev(method, payload, signal);
    });
    const stop = createDelivery({ api, logger: captureLogger().logger }).showTyping(CHAT);
    await telegram.waitFor("sendChatAction");
    expect(signals[0]?.aborted).toBe(false);
    stop();
    expect(signals[0]?.aborted).toBe(true);
  });

  describe("of the message for an update the inbox gave up on", () => {
    function itemFor(topic: number | undefined): InboxItem {
      const update = buildTextUpdate({ updateId: 1, messageId: 1, text: "hi", chatId: GROUP });
      if (topic !== undefined && update.message) {
        Object.assign(update.message, { is_topic_message: true, message_thread_id: topic });
      }
      return {
        updateId: 1,
        chatId: String(GROUP),
        update,
        attempts: 5,
        leaseUntil: 0,
        delivered: 0,
        liveMessages: [],
        toolFiles: [],
      };
    }

    it("goes to the forum topic the message was written in", async () => {
      await tellGaveUp(delivery, itemFor(77));
      expect(telegram.sent.at(-1)).toMatchObject({
        chat_id: GROUP,
        plain_text: GAVE_UP,
        body: { message_thread_id: 77 },
      });
    });

    it("goes to the chat itself when the message had no topic", async () => {
      await tellGaveUp(delivery, itemFor(undefined));
      expect(telegram.sent.at(-1)?.plain_text).toBe(GAVE_UP);
      expect(telegram.sent.at(-1)?.body).not.toHaveProperty("message_thread_id");
    });
  });
});
