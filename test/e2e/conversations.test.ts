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

const FORUM = -1005550001;
/** A forum where the bot is no administrator: it may not open topics. */
const FORUM_WITHOUT_RIGHTS = -1005550002;
const GROUP = -4005550003;
const MENTION = "@koroku_test_bot";
const USERS = Array.from({ length: 10 }, (_, i) => ALLOWED_USER + i);

/** Every text the model was given in a request, its history included. */
const contextOf = (r: RecordedRequest) =>
  r.body.contents.flatMap((c) => (c.parts ?? []).map((p) => p.text ?? "")).join("\n");
const lastUserText = (r: RecordedRequest) =>
  (r.body.contents.at(-1)?.parts ?? []).map((p) => p.text ?? "").join("");

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
    const database = openDatabase(w.db.target, { logger });
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

  it("/new clears the conversation where the bot may not open topics, or there are none", async () => {
    for (const chatId of [FORUM_WITHOUT_RIGHTS, GROUP]) {
      const forum = chatId === FORUM_WITHOUT_RIGHTS;
      await w.say(`${MENTION} remember this`, { chatId, forum });
      await waitForText(chatId, (t) => t.includes("remember this"));
      await w.say("/new", { chatId, forum });
      const cleared = await waitForText(chatId, (t) => t.startsWith("🧹"));
      expect(cleared.plain_text).toContain("2 stored events");
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
