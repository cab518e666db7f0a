import { type Api, Bot, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";

let fake: FakeTelegram;
let api: Api;

beforeEach(async () => {
  fake = await startFakeTelegram();
  api = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } }).api;
});

afterEach(async () => {
  await fake.close();
});

async function grammyError(call: Promise<unknown>): Promise<GrammyError> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof GrammyError)) throw new Error(`expected a GrammyError, got ${error}`);
  return error;
}

describe("fake Telegram: sendMessage", () => {
  it("accepts valid HTML and answers with a realistic Message", async () => {
    const first = await api.sendMessage(
      42,
      '<b>Hi</b> &amp; <a href="https://example.com/?a=1&amp;b=2">link</a>',
      { parse_mode: "HTML" },
    );
    const second = await api.sendMessage(42, "plain <b> stays literal");

    expect(first.text).toBe("Hi & link");
    expect(first.entities).toEqual([
      { type: "bold", offset: 0, length: 2 },
      { type: "text_link", offset: 5, length: 4, url: "https://example.com/?a=1&b=2" },
    ]);
    expect(first.chat).toMatchObject({ id: 42, type: "private" });
    expect(first.from?.id).toBe(fake.bot.id);
    expect(second.message_id).toBeGreaterThan(first.message_id);
    expect(second.text).toBe("plain <b> stays literal");
    expect(fake.sent.map((m) => [m.message_id, m.plain_text])).toEqual([
      [first.message_id, "Hi & link"],
      [second.message_id, "plain <b> stays literal"],
    ]);
  });

  it("gives a pre block the language of its code child", async () => {
    const message = await api.sendMessage(
      1,
      '<pre><code class="language-ts">const a = 1 &lt; 2;</code></pre>',
      { parse_mode: "HTML" },
    );
    expect(message.text).toBe("const a = 1 < 2;");
    expect(message.entities).toEqual([{ type: "pre", offset: 0, length: 16, language: "ts" }]);
  });

  it("rejects empty text, also when only tags or whitespace remain", async () => {
    for (const text of ["", "   ", "<b> </b>"]) {
      const error = await grammyError(api.sendMessage(1, text, { parse_mode: "HTML" }));
      expect(error.error_code).toBe(400);
      expect(error.description).toBe("Bad Request: message text is empty");
    }
    expect(fake.sent).toEqual([]);
  });

  it("counts the parsed text's UTF-16 length against the 4096 limit", async () => {
    await api.sendMessage(1, "a".repeat(4096));
    await api.sendMessage(1, `<b>${"&lt;".repeat(4096)}</b>`, { parse_mode: "HTML" });

    for (const text of ["a".repeat(4097), "😀".repeat(2049)]) {
      const error = await grammyError(api.sendMessage(1, text));
      expect(error.error_code).toBe(400);
      expect(error.description).toBe("Bad Request: message is too long");
    }
    expect(fake.sent).toHaveLength(2);
  });

  it.each([
    ["an unknown tag", "<p>x</p>", 'Unsupported start tag "p"'],
    ["an unclosed tag", "<b>x", 'Can\'t find end tag corresponding to start tag "b"'],
    ["misnested tags", "<b><i>x</b></i>", 'expected "</i>", found "</b>"'],
    ["a bare <", "1 < 2", 'Unsupported start tag ""'],
    ["a bare &", "fish & chips", 'Character "&"'],
    ["an unknown entity", "&nbsp;", 'Character "&"'],
    ["<a> without href", "<a>x</a>", 'attribute "href"'],
    ["an unsupported attribute", '<b style="x">y</b>', 'Unsupported attribute "style"'],
    ["a stray end tag", "x</b>", "Unexpected end tag"],
  ])("rejects malformed HTML: %s", async (_name, text, reason) => {
    const error = await grammyError(api.sendMessage(1, text, { parse_mode: "HTML" }));
    expect(error.error_code).toBe(400);
    expect(error.description).toMatch(/^Bad Request: can't parse entities: /);
    expect(error.description).toContain(reason);
    expect(fake.calls.at(-1)?.response).toMatchObject({ ok: false, error_code: 400 });
  });

  it("does not parse HTML without parse_mode", async () => {
    const message = await api.sendMessage(1, "<p>1 < 2 & 3</p>");
    expect(message.text).toBe("<p>1 < 2 & 3</p>");
  });
});

describe("fake Telegram: scripted failures", () => {
  it("answers 429 with parameters.retry_after, then recovers", async () => {
    fake.failNext("sendMessage", { error_code: 429, retry_after: 7 });

    const error = await grammyError(api.sendMessage(1, "hi"));
    expect(error.error_code).toBe(429);
    expect(error.description).toBe("Too Many Requests: retry after 7");
    expect(error.parameters.retry_after).toBe(7);

    await expect(api.sendMessage(1, "hi")).resolves.toMatchObject({ text: "hi" });
    expect(fake.sent).toHaveLength(1);
  });

  it("fails the given number of times with 5xx errors", async () => {
    fake.failNext("sendChatAction", { error_code: 502 }, 2);

    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await grammyError(api.sendChatAction(1, "typing"));
      expect([error.error_code, error.description]).toEqual([502, "Bad Gateway"]);
    }
    await expect(api.sendChatAction(1, "typing")).resolves.toBe(true);
  });

  it("rejects an unknown token with 401", async () => {
    const stranger = new Bot("1:wrong", { client: { apiRoot: fake.apiRoot } }).api;
    const error = await grammyError(stranger.getMe());
    expect([error.error_code, error.description]).toEqual([401, "Unauthorized"]);
  });
});

describe("fake Telegram: getUpdates", () => {
  it("long-polls until an update is pushed", async () => {
    const poll = api.getUpdates({ timeout: 30 });
    await fake.waitFor("getUpdates");

    const pushed = fake.pushText({ text: "/start", userId: 7 });
    const updates = await poll;

    expect(updates).toEqual([pushed]);
    expect(updates[0]?.message?.entities).toEqual([{ type: "bot_command", offset: 0, length: 6 }]);
    expect(updates[0]?.message?.chat).toMatchObject({ id: 7, type: "private" });
  });

  it("honours offset: updates below it are confirmed and never returned again", async () => {
    const first = fake.pushText({ text: "one" });
    const second = fake.pushText({ text: "two" });

    expect(await api.getUpdates()).toEqual([first, second]);
    expect(await api.getUpdates({ offset: first.update_id + 1 })).toEqual([second]);
    expect(await api.getUpdates()).toEqual([second]);
    expect(await api.getUpdates({ offset: second.update_id + 1, timeout: 0 })).toEqual([]);
    expect(await api.getUpdates()).toEqual([]);
  });

  it("ends an older poll with 409 when a second poller arrives", async () => {
    const older = grammyError(api.getUpdates({ timeout: 30 }));
    await fake.waitFor("getUpdates");

    const newer = api.getUpdates({ timeout: 30 });
    expect((await older).error_code).toBe(409);
    fake.pushText({ text: "hello" });
    expect(await newer).toHaveLength(1);
  });

  it("refuses getUpdates while a webhook is set", async () => {
    const insecure = await grammyError(api.setWebhook("http://127.0.0.1/hook"));
    expect(insecure.description).toContain("An HTTPS URL must be provided");

    await api.setWebhook("https://bot.example/telegram/webhook", { secret_token: "s3cret" });
    expect(fake.webhook).toEqual({
      url: "https://bot.example/telegram/webhook",
      secret_token: "s3cret",
    });
    expect((await api.getWebhookInfo()).url).toBe("https://bot.example/telegram/webhook");
    expect((await grammyError(api.getUpdates())).error_code).toBe(409);

    await api.deleteWebhook();
    expect(await api.getUpdates()).toEqual([]);
  });

  it("serves a polling grammY bot end to end, and lets it stop", async () => {
    const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
    bot.command("start", (ctx) =>
      ctx.reply(`hello <b>${ctx.from?.first_name}</b>`, { parse_mode: "HTML" }),
    );
    const running = bot.start({ drop_pending_updates: true });
    await fake.waitFor("getUpdates");

    fake.pushText({ text: "/start", firstName: "Ada", userId: 5 });
    const reply = await fake.waitFor(
      (call) => call.method === "sendMessage" && call.response?.ok === true,
    );
    expect(reply.body).toMatchObject({ chat_id: 5, text: "hello <b>Ada</b>" });
    expect(fake.sent[0]?.plain_text).toBe("hello Ada");

    await bot.stop();
    await running;
    expect(fake.calls.map((call) => call.method).slice(0, 2)).toEqual(["getMe", "deleteWebhook"]);
  });

  it("close() does not hang on an open long poll", async () => {
    const poll = api.getUpdates({ timeout: 30 }).then(
      () => "settled",
      () => "settled",
    );
    await fake.waitFor("getUpdates");

    await fake.close();
    expect(await poll).toBe("settled");
  }, 5000);
});

describe("fake Telegram: other methods and helpers", () => {
  it("validates and keeps setMyCommands", async () => {
    const invalid = await grammyError(api.setMyCommands([{ command: "/Start", description: "x" }]));
    expect(invalid.description).toBe("Bad Request: BOT_COMMAND_INVALID");

    await api.setMyCommands([{ command: "start", description: "what the bot is" }]);
    expect(fake.commands).toEqual([{ command: "start", description: "what the bot is" }]);
  });

  it("answers getMe from the token and true for unmodelled methods", async () => {
    const me = await api.getMe();
    expect(me).toMatchObject({ id: Number(fake.token.split(":")[0]), is_bot: true });
    await expect(api.setMyDescription("a bot")).resolves.toBe(true);
    expect(fake.calls.map((call) => call.method)).toEqual(["getMe", "setMyDescription"]);
    expect(fake.calls[1]?.body).toEqual({ description: "a bot" });
  });

  it("rejects an unknown chat action", async () => {
    const error = await grammyError(api.sendChatAction(1, "dancing" as "typing"));
    expect(error.description).toBe("Bad Request: wrong parameter action in request");
  });

  it("waitFor resolves on a later call and reports what was recorded on timeout", async () => {
    const waiting = fake.waitFor((call) => call.method === "sendMessage" && call.body.text === "b");
    await api.sendMessage(1, "a");
    await api.sendMessage(1, "b");
    expect((await waiting).body).toMatchObject({ text: "b" });

    const timedOut = fake.waitFor("sendChatAction", 20);
    await expect(timedOut).rejects.toThrow(/no "sendChatAction" call within 20 ms/);
    await expect(timedOut).rejects.toThrow(/1\. sendMessage \{"chat_id":1,"text":"a"\} → ok/);
  });
});

describe("fake Telegram: topics", () => {
  const FORUM = -1001700;

  it("sends into a topic only where there are topics", async () => {
    const refused = await grammyError(api.sendMessage(42, "hi", { message_thread_id: 5 }));
    expect(refused.description).toBe("Bad Request: message thread not found");
    const inGroup = await grammyError(api.sendMessage(-4001, "hi", { message_thread_id: 5 }));
    expect(inGroup.error_code).toBe(400);
    const sent = await api.sendMessage(FORUM, "hi", { message_thread_id: 5 });
    expect(sent).toMatchObject({ message_thread_id: 5, is_topic_message: true });
  });

  it("creates and renames topics only in forums where the bot may, and in threaded private chats", async () => {
    expect((await grammyError(api.createForumTopic(FORUM, "x"))).description).toBe(
      "Bad Request: the chat is not a forum",
    );
    fake.addForum(FORUM);
    expect((await grammyError(api.createForumTopic(FORUM, "x"))).description).toContain(
      "not enough rights",
    );
    fake.addForum(FORUM, { botCanManageTopics: true });
    expect((await grammyError(api.createForumTopic(FORUM, ""))).description).toContain(
      "TOPIC_TITLE_EMPTY",
    );
    expect((await grammyError(api.createForumTopic(FORUM, "x".repeat(129)))).error_code).toBe(400);
    const topic = await api.createForumTopic(FORUM, "Plans");
    await api.editForumTopic(FORUM, topic.message_thread_id, { name: "Trip plans" });
    expect(fake.topicsOf(FORUM).get(topic.message_thread_id)).toBe("Trip plans");
    expect((await grammyError(api.editForumTopic(FORUM, 999_999, { name: "y" }))).description).toBe(
      "Bad Request: TOPIC_ID_INVALID",
    );
    expect((await grammyError(api.createForumTopic(42, "x"))).error_code).toBe(400);
  });

  it("lets a bot in threaded mode open topics in private chats", async () => {
    const threaded = await startFakeTelegram({ topicsInPrivateChats: true });
    const threadedApi = new Bot(threaded.token, { client: { apiRoot: threaded.apiRoot } }).api;
    try {
      const topic = await threadedApi.createForumTopic(42, "Plans");
      const sent = await threadedApi.sendMessage(42, "hi", {
        message_thread_id: topic.message_thread_id,
      });
      expect(sent.message_thread_id).toBe(topic.message_thread_id);
      expect((await threadedApi.getMe()).has_topics_enabled).toBe(true);
    } finally {
      await threaded.close();
    }
  });
});

describe("fake Telegram: drafts, edits and the stop button", () => {
  it("shows drafts in private chats only, up to 4096 characters, five a second per chat", async () => {
    expect(
      await api.sendMessageDraft(42, 7, "<b>Hel</b>", { parse_mode: "HTML", can_stop: true }),
    ).toBe(true);
    expect(fake.drafts.map((d) => [d.chat_id, d.draft_id, d.plain_text])).toEqual([[42, 7, "Hel"]]);
    expect((await grammyError(api.sendMessageDraft(-100123, 7, "x"))).error_code).toBe(400);
    expect((await grammyError(api.sendMessageDraft(42, 0, "x"))).description).toContain("draft_id");
    expect(
      (await grammyError(api.sendMessageDraft(42, 7, "x".repeat(4097)))).description,
    ).toContain("too long");
    for (let i = 0; i < 4; i++) await api.sendMessageDraft(42, 7, `x${i}`);
    const limited = await grammyError(api.sendMessageDraft(42, 7, "one too many"));
    expect(limited.error_code).toBe(429);
    expect(limited.parameters.retry_after).toBe(1);
    // The limit is per chat.
    expect(await api.sendMessageDraft(43, 7, "another chat")).toBe(true);
  });

  it("edits a sent message, and says when the new text is the same", async () => {
    const sent = await api.sendMessage(42, "draft <b>one</b>", { parse_mode: "HTML" });
    await api.editMessageText(42, sent.message_id, "draft <b>two</b>", { parse_mode: "HTML" });
    expect(fake.sent.map((m) => m.plain_text)).toEqual(["draft two"]);
    expect(fake.edits).toHaveLength(1);
    const same = await grammyError(
      api.editMessageText(42, sent.message_id, "draft <b>two</b>", { parse_mode: "HTML" }),
    );
    expect(same.description).toContain("message is not modified");
    // Bold no more: the entities changed, so it is an edit.
    await api.editMessageText(42, sent.message_id, "draft two");
    expect((await grammyError(api.editMessageText(42, 999, "x"))).description).toContain(
      "not found",
    );
    await api.deleteMessage(42, sent.message_id);
    expect(fake.sent).toEqual([]);
  });

  it("sends stopped_message_generation for a private chat's draft", () => {
    const update = fake.pressStop(42, 7);
    expect(update.stopped_message_generation).toEqual({
      chat: { id: 42, type: "private", first_name: "Test User" },
      draft_id: 7,
    });
    expect(fake.pressStop(42, 8, 3).stopped_message_generation).toMatchObject({
      message_thread_id: 3,
      draft_id: 8,
    });
    expect(() => fake.pressStop(-100123, 7)).toThrow(/private/);
  });
});
