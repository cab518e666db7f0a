import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { createSessionStore } from "../../src/session/store.js";
import { type RecordedRequest, text } from "../fakes/gemini.js";
import { buildTextUpdate } from "../fakes/telegram.js";
import { captureLogger } from "../helpers/logs.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";

const FORUM = -1005550001;
/** A forum where the bot is no administrator: it may not open topics. */
const FORUM_WITHOUT_RIGHTS = -1005550002;
const GROUP = -4005550003;
const MENTION = "@koroku_test_bot";
const USERS = Array.from({ length: 10 }, (_, i) => ALLOWED_USER + i);

/** Every text the model was given in a request, its history included. */
const contextOf = (r: RecordedRequest) =>
  r.body.contents.flatMap((c) => (c.parts ?? []).map((p) => p.text ?? "")).join("\n");
const lastUserText = (r: RecordedRequest) => wordsOf(r.body.contents.at(-1)?.parts);

describe("conversations end to end: topics are conversations of their own", () => {
  let w: ServiceWorld;
  let nextUser = 0;
  const user = () => USERS[nextUser++] as number;
  const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
  const waitForText = (chatId: number, match: (t: string) => boolean) =>
    eventually(() => sentTo(chatId).find((m) => match(m.plain_text)));
  /** The request that answered a message, found by its words. */
  const requestFor = (words: string) =>
    eventually(() => w.gemini.requests.find((r) => lastUserText(r).includes(words)));

  beforeAll(async () => {
    w = await startWorld({
      env: { ALLOWED_USER_IDS: USERS.join(",") },
      telegram: { topicsInPrivateChats: true },
    });
    w.telegram.addForum(FORUM, { botCanManageTopics: true });
    w.telegram.addForum(FORUM_WITHOUT_RIGHTS);
    w.gemini.setDefault((r) => text(`echo: ${lastUserText(r)}`));
  });
  afterAll(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("keeps the topics of a private chat apart, and answers in the topic asked from", async () => {
    const u = user();
    await w.say("apples in topic eleven", { userId: u, threadId: 11 });
    const first = await waitForText(u, (t) => t.includes("apples"));
    expect(first.body.message_thread_id).toBe(11);

    await w.say("pears in topic twelve", { userId: u, threadId: 12 });
    const second = await waitForText(u, (t) => t.includes("pears"));
    expect(second.body.message_thread_id).toBe(12);
    expect(contextOf(await requestFor("pears"))).not.toContain("apples");

    await w.say("outside any topic", { userId: u });
    const plain = await waitForText(u, (t) => t.includes("outside"));
    expect(plain.body).not.toHaveProperty("message_thread_id");
    const outside = contextOf(await requestFor("outside any topic"));
    expect(outside).not.toContain("apples");
    expect(outside).not.toContain("pears");

    await w.say("more apples", { userId: u, threadId: 11 });
    expect(contextOf(await requestFor("more apples"))).toContain("apples in topic eleven");
  });

  it("gives /history, /status and /clear each topic's own conversation", async () => {
    const u = user();
    await w.say("kiwis here", { userId: u, threadId: 21 });
    await waitForText(u, (t) => t.includes("echo: kiwis"));
    await w.say("plums there", { userId: u, threadId: 22 });
    await waitForText(u, (t) => t.includes("echo: plums"));

    await w.say("/history", { userId: u, threadId: 21 });
    const history = await waitForText(u, (t) => t.startsWith("You: kiwis"));
    expect(history.body.message_thread_id).toBe(21);
    expect(history.plain_text).not.toContain("plums");

    await w.say("/status", { userId: u, threadId: 22 });
    const status = await waitForText(u, (t) => t.includes("Context:"));
    expect(status.plain_text).toContain("2 events");
    expect(status.body.message_thread_id).toBe(22);

    await w.say("/clear", { userId: u, threadId: 22 });
    const cleared = await waitForText(u, (t) => t.startsWith("🧹"));
    expect(cleared.plain_text).toContain("2 stored events");
    await w.say("/history", { userId: u, threadId: 21 });
    await eventually(
      () => sentTo(u).filter((m) => m.plain_text.startsWith("You: kiwis")).length === 2,
    );
  });

  it("keeps a forum's topics apart and its General topic with the history stored before topics", async () => {
    // What an earlier version stored for the forum, all under the chat's id.
    const { logger } = captureLogger();
    const database = openDatabase(w.db.target);
    await createSessionStore({ db: database.db, logger }).append(String(FORUM), [
      {
        event: {
          v: 1,
          event_type: "session",
          role: "user",
          parts: [{ kind: "text", text: "[Ann] the old plan" }],
        },
      },
      {
        event: {
          v: 1,
          event_type: "session",
          role: "model",
          parts: [{ kind: "text", text: "noted" }],
        },
      },
    ]);
    await database.close();

    await w.say(`${MENTION} what was the plan?`, { chatId: FORUM, forum: true });
    const general = await waitForText(FORUM, (t) => t.includes("what was the plan"));
    expect(general.body).not.toHaveProperty("message_thread_id");
    expect(contextOf(await requestFor("what was the plan"))).toContain("the old plan");

    await w.say(`${MENTION} a topic of its own`, { chatId: FORUM, threadId: 3 });
    const topic = await waitForText(FORUM, (t) => t.includes("a topic of its own"));
    expect(topic.body.message_thread_id).toBe(3);
    expect(contextOf(await requestFor("a topic of its own"))).not.toContain("the old plan");
  });

  it("/new opens a topic, named after its first message, in a private chat with topics", async () => {
    const u = user();
    await w.say("/new", { userId: u });
    const created = await w.telegram.waitFor(
      (c) => c.method === "createForumTopic" && c.body.chat_id === u && c.response !== undefined,
    );
    const threadId = (created.response as { result: { message_thread_id: number } }).result
      .message_thread_id;
    const greeting = await waitForText(u, (t) => t.includes("fresh conversation starts here"));
    expect(greeting.body.message_thread_id).toBe(threadId);
    const told = await waitForText(u, (t) => t.startsWith("🆕 Opened"));
    expect(told.body).not.toHaveProperty("message_thread_id");

    await w.say("  plan a trip\nto Kyoto in spring  ", { userId: u, threadId });
    const answer = await waitForText(u, (t) => t.includes("Kyoto"));
    expect(answer.body.message_thread_id).toBe(threadId);
    expect(w.telegram.topicsOf(u).get(threadId)).toBe("plan a trip to Kyoto in spring");

    await w.say("and in autumn?", { userId: u, threadId });
    await waitForText(u, (t) => t.includes("autumn"));
    expect(w.telegram.calls.filter((c) => c.method === "editForumTopic")).toHaveLength(1);
    expect(w.telegram.topicsOf(u).get(threadId)).toBe("plan a trip to Kyoto in spring");
  });

  it("/new in a forum asks for a first message that mentions the bot, and names the topic after it", async () => {
    await w.say(`/new@${w.telegram.bot.username}`, { chatId: FORUM, forum: true });
    const greeting = await waitForText(FORUM, (t) => t.includes("fresh conversation starts here"));
    expect(greeting.plain_text).toContain(
      `Your first message to me (mention @${w.telegram.bot.username})`,
    );
    const threadId = greeting.body.message_thread_id as number;
    await w.say(`${MENTION} plan the offsite`, { chatId: FORUM, threadId });
    await waitForText(FORUM, (t) => t.includes("plan the offsite"));
    expect(w.telegram.topicsOf(FORUM).get(threadId)).toBe("plan the offsite");
  });

  it("/new starts a fresh context where the bot may not open topics, or there are none", async () => {
    for (const chatId of [FORUM_WITHOUT_RIGHTS, GROUP]) {
      const forum = chatId === FORUM_WITHOUT_RIGHTS;
      await w.say(`${MENTION} remember this`, { chatId, forum });
      await waitForText(chatId, (t) => t.includes("remember this"));
      await w.say("/new", { chatId, forum });
      const fresh = await waitForText(chatId, (t) => t.startsWith("🆕 A fresh conversation"));
      expect(fresh.plain_text).toContain("the 2 earlier events are out of my context");
      await w.say(`${MENTION} what now`, { chatId, forum });
      await waitForText(chatId, (t) => t.includes("what now"));
      expect(contextOf(await requestFor("what now"))).not.toContain("remember this");
    }
    const refused = w.telegram.calls.filter(
      (c) => c.method === "createForumTopic" && !c.response?.ok,
    );
    expect(refused.map((c) => c.body.chat_id)).toEqual([FORUM_WITHOUT_RIGHTS]);
  });

  it("tells the model what a reply quotes, where a forward comes from, and who speaks in a group", async () => {
    const u = user();
    await w.say("tell me something", { userId: u });
    const answer = await waitForText(u, (t) => t.includes("tell me something"));
    const post = async (fields: Record<string, unknown>, words: string) => {
      const id = w.nextUpdateId();
      const update = buildTextUpdate({ updateId: id, messageId: id, text: words, userId: u });
      Object.assign(update.message as object, fields);
      expect((await w.post(update)).status).toBe(200);
      return lastUserText(await requestFor(words));
    };
    const replied = await post(
      {
        reply_to_message: answer.message,
        quote: { text: "something", position: 16, is_manual: true },
      },
      "what do you mean?",
    );
    expect(replied).toBe(
      "[In reply to your own earlier message, quoting: “something”]\nwhat do you mean?",
    );
    const forwarded = await post(
      {
        forward_origin: {
          type: "channel",
          date: 1_764_000_000,
          chat: { id: -1009998887, type: "channel", title: "Daily News" },
          message_id: 77,
        },
      },
      "rain tomorrow",
    );
    expect(forwarded).toBe(
      "[Forwarded from the channel “Daily News”, first sent 2025-11-24]\nrain tomorrow",
    );
    await w.say(`so, ${MENTION}   what about   today?`, { chatId: GROUP, userId: u });
    expect(lastUserText(await requestFor("what about"))).toBe(
      "[Test User] so, what about   today?",
    );
  });
});

describe("conversations end to end: groups, strangers and service messages", () => {
  const GROUP_CHAT = -1005550010;
  const ANON_GROUP = -1005550011;
  const OTHER_GROUP = -1005550012;
  const OLD_GROUP = -4005550013;
  const NEW_SUPERGROUP = -1005550014;
  const STRANGER = 99_000_001;
  const GROUP_ANONYMOUS_BOT = {
    id: 1087968824,
    is_bot: true,
    first_name: "Group",
    username: "GroupAnonymousBot",
  };
  let w: ServiceWorld;
  const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
  const supergroup = (id: number, title = "Crew") => ({ id, type: "supergroup", title });
  const ann = { id: ALLOWED_USER, is_bot: false, first_name: "Ann" };

  /** Posts a message update shaped like Telegram's; returns its update_id. */
  const post = async (message: Record<string, unknown>) => {
    const updateId = w.nextUpdateId();
    const res = await w.post({
      update_id: updateId,
      message: { message_id: updateId, date: 1_764_000_000, ...message },
    });
    expect(res.status).toBe(200);
    return updateId;
  };
  const mentionText = (words: string) => ({
    text: `${MENTION} ${words}`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
  });
  const commandText = (command: string) => ({
    text: command,
    entities: [{ type: "bot_command", offset: 0, length: command.length }],
  });
  /** A message Koroku answers in the chat: once answered, all posted before it were handled. */
  const sentinel = async (chatId: number, words: string) => {
    await post({ chat: supergroup(chatId), from: ann, ...mentionText(words) });
    await eventually(() => sentTo(chatId).find((m) => m.plain_text.includes(words)));
  };
  const ignoredLog = (why: RegExp) =>
    eventually(() =>
      w.service.logs.find((l) => l.msg === "ignored a message" && why.test(String(l.why))),
    );

  beforeAll(async () => {
    w = await startWorld({
      env: { ALLOWED_USER_IDS: [ALLOWED_USER, ANON_GROUP].join(",") },
    });
    w.gemini.setDefault((r) => text(`echo: ${lastUserText(r)}`));
  });
  afterAll(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("leaves other bots' bare commands alone and answers its own", async () => {
    const before = w.gemini.requests.length;
    await post({ chat: supergroup(GROUP_CHAT), from: ann, ...commandText("/report") });
    await post({ chat: supergroup(GROUP_CHAT), from: ann, ...commandText("/ban@other_bot") });
    await post({ chat: supergroup(GROUP_CHAT), from: ann, ...commandText("/help") });
    await eventually(() => sentTo(GROUP_CHAT).find((m) => m.plain_text.includes("Commands:")));
    await sentinel(GROUP_CHAT, "after the commands");
    expect(sentTo(GROUP_CHAT)).toHaveLength(2);
    expect(w.gemini.requests.length).toBe(before + 1);
  });

  it("says nothing to strangers in a group, nor to Telegram's service account, and logs who", async () => {
    await post({
      chat: supergroup(GROUP_CHAT),
      from: { id: STRANGER, is_bot: false, first_name: "Eve" },
      ...mentionText("let me in"),
    });
    // A linked channel's post, forwarded into its discussion group by Telegram itself.
    await post({
      chat: supergroup(GROUP_CHAT),
      from: { id: 777000, is_bot: false, first_name: "Telegram" },
      sender_chat: { id: -1005550099, type: "channel", title: "Linked" },
      is_automatic_forward: true,
      forward_origin: {
        type: "channel",
        date: 1,
        chat: { id: -1005550099, type: "channel", title: "Linked" },
        message_id: 4,
      },
      ...mentionText("from the channel"),
    });
    await sentinel(GROUP_CHAT, "after the strangers");
    expect(sentTo(GROUP_CHAT).filter((m) => /user id|ALLOWED_USER_IDS/.test(m.plain_text))).toEqual(
      [],
    );
    expect((await ignoredLog(/not on the allowlist, in a group/)).sender_id).toBe(STRANGER);
    expect((await ignoredLog(/service account/)).sender_id).toBe(777000);
    expect(w.gemini.requests.some((r) => contextOf(r).includes("let me in"))).toBe(false);
  });

  it("lets anonymous administrators speak for a group on the allowlist, and no other", async () => {
    await post({
      chat: supergroup(ANON_GROUP, "Admins"),
      from: GROUP_ANONYMOUS_BOT,
      sender_chat: supergroup(ANON_GROUP, "Admins"),
      ...mentionText("status report please"),
    });
    const answer = await eventually(() =>
      sentTo(ANON_GROUP).find((m) => m.plain_text.includes("status report")),
    );
    expect(answer.plain_text).toBe("echo: [Admins] status report please");
    await post({
      chat: supergroup(OTHER_GROUP, "Others"),
      from: GROUP_ANONYMOUS_BOT,
      sender_chat: supergroup(OTHER_GROUP, "Others"),
      ...mentionText("me too"),
    });
    expect((await ignoredLog(/anonymous administrator/)).sender_id).toBe(OTHER_GROUP);
    expect(sentTo(OTHER_GROUP)).toEqual([]);
  });

  it("answers no service message: a pin, members joining, in a private chat or a group", async () => {
    const pinned = { message_id: 1, date: 1, chat: supergroup(GROUP_CHAT), from: ann, text: "x" };
    await post({ chat: supergroup(GROUP_CHAT), from: ann, pinned_message: pinned });
    await post({ chat: supergroup(GROUP_CHAT), from: ann, new_chat_members: [ann] });
    const privateChat = { id: ALLOWED_USER, type: "private", first_name: "Ann" };
    await post({ chat: privateChat, from: ann, pinned_message: { ...pinned, chat: privateChat } });
    const before = sentTo(GROUP_CHAT).length;
    await sentinel(GROUP_CHAT, "after the pins");
    expect(sentTo(GROUP_CHAT)).toHaveLength(before + 1);
    await w.say("and in private?");
    await eventually(() => sentTo(ALLOWED_USER).find((m) => m.plain_text.includes("in private")));
    expect(sentTo(ALLOWED_USER)).toHaveLength(1);
  });

  it("moves a group's conversation to the supergroup it became", async () => {
    const oldGroup = { id: OLD_GROUP, type: "group", title: "Old" };
    await post({ chat: oldGroup, from: ann, ...mentionText("the password is swordfish") });
    await eventually(() => sentTo(OLD_GROUP).find((m) => m.plain_text.includes("swordfish")));
    // Telegram says it in both chats; the one who upgraded need not be on the allowlist.
    const upgrader = { id: STRANGER, is_bot: false, first_name: "Eve" };
    await post({ chat: oldGroup, from: upgrader, migrate_to_chat_id: NEW_SUPERGROUP });
    await post({
      chat: supergroup(NEW_SUPERGROUP),
      from: upgrader,
      migrate_from_chat_id: OLD_GROUP,
    });
    await eventually(() =>
      w.service.logs.find((l) => l.msg === "a group became a supergroup; its conversation moved"),
    );
    await sentinel(NEW_SUPERGROUP, "what was the password?");
    const request = await eventually(() =>
      w.gemini.requests.find((r) => lastUserText(r).includes("what was the password")),
    );
    expect(contextOf(request)).toContain("swordfish");
    expect(sentTo(OLD_GROUP)).toHaveLength(1);
    expect(sentTo(NEW_SUPERGROUP)).toHaveLength(1);
    // The old group's tokens went with it: /usage counts both answers.
    await post({ chat: supergroup(NEW_SUPERGROUP), from: ann, ...commandText("/usage") });
    const usage = await eventually(() =>
      sentTo(NEW_SUPERGROUP).find((m) => m.plain_text.includes("Today")),
    );
    const moved = w.service.logs.find(
      (l) => l.msg === "a group became a supergroup; its conversation moved",
    );
    expect(moved?.usageRows).toBe(1);
    expect(usage.plain_text).not.toMatch(/Today: 0 prompt/);
  });
});
