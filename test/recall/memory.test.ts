import type { Message } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROFILE_BUDGET } from "../../src/recall/profile.js";
import { scopeOfKey } from "../../src/scope/recall-scope.js";
import { appendMemory, readMemory } from "../../src/session/memory-files.js";
import { call, type RecordedRequest, text } from "../fakes/gemini.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { botOnHarness, buttonPress } from "../helpers/bot.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { said } from "../helpers/events.js";
import { CHAT_MODEL, type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";

const USER = 8101;
const GROUP = -1008101;

const instructionOf = (r: RecordedRequest | undefined) =>
  (r?.body.systemInstruction?.parts ?? []).map((p) => p.text ?? "").join("");

describe.each(DATABASE_KINDS)("the profile, /memory and /forget on %s", (kind) => {
  let h: Harness;
  let telegram: FakeTelegram;
  let bot: ReturnType<typeof botOnHarness>["bot"];
  let updateId = 0;

  beforeAll(async () => {
    h = await startHarness({ kind });
    telegram = await startFakeTelegram({ topicsInPrivateChats: true });
    ({ bot } = botOnHarness(h, telegram, {
      allowedUserIds: [USER],
      settings: { model: CHAT_MODEL, maxEvents: 0, maxTokens: 0, timeZone: "UTC" },
    }));
  });
  afterAll(async () => {
    expect(h.fake.rejections).toEqual([]);
    await telegram.close();
    await h.close();
  });

  const say = (words: string, where: { chatId?: number; threadId?: number } = {}) => {
    const id = ++updateId;
    return bot.run(
      buildTextUpdate({ updateId: id, messageId: id, text: words, userId: USER, ...where }),
    );
  };
  const press = (message: Message, data: string) => buttonPress(++updateId, USER, message, data);
  const lastCall = (method: string) => telegram.calls.filter((c) => c.method === method).at(-1);
  const lastRequest = () => h.fake.requests.filter((r) => r.model === CHAT_MODEL).at(-1);

  it("keeps what the model remembers for the whole private scope, in the system instruction, never in a group", async () => {
    h.fake.scriptFor(
      CHAT_MODEL,
      call("remember", { fact: "prefers metric units" }),
      text("Noted."),
      call("remember", { fact: "  Daughter Mia,   born 2019 " }),
      text("Noted too."),
    );
    await say("I use metric, always", { threadId: 3 });
    await say("my daughter Mia was born in 2019", { threadId: 3 });
    const profile = await h.app.profiles.list(`private-${USER}`);
    expect(profile.map((e) => e.fact)).toEqual(["prefers metric units", "Daughter Mia, born 2019"]);

    h.fake.scriptFor(CHAT_MODEL, text("hello from topic 4"));
    await say("hi", { threadId: 4 });
    const instruction = instructionOf(lastRequest());
    expect(instruction).toContain("- prefers metric units\n- Daughter Mia, born 2019");
    // The profile is the instruction's end: a fixed prefix, then the same text while it holds.
    h.fake.scriptFor(CHAT_MODEL, text("again"));
    await say("hi again", { threadId: 4 });
    expect(instructionOf(lastRequest())).toBe(instruction);

    h.fake.scriptFor(CHAT_MODEL, text("group answer"));
    await say("/start@koroku_test_bot", { chatId: GROUP });
    await say(`@${telegram.bot.username} hello group`, { chatId: GROUP });
    expect(instructionOf(lastRequest())).not.toContain("metric");
  });

  it("/memory lists the profile with a delete button per entry that works", async () => {
    await say("/memory", { threadId: 4 });
    const list = telegram.sent.at(-1);
    expect(list?.body.message_thread_id).toBe(4);
    expect(list?.plain_text).toBe(
      "🧠 What I remember (2 of at most 40)\n1. prefers metric units\n2. Daughter Mia, born 2019",
    );
    const [metric, mia] = await h.app.profiles.list(`private-${USER}`);
    expect(list?.message.reply_markup?.inline_keyboard).toEqual([
      [{ text: "🗑 1. prefers metric units", callback_data: `memory:del:${metric?.id}` }],
      [{ text: "🗑 2. Daughter Mia, born 2019", callback_data: `memory:del:${mia?.id}` }],
    ]);
    await bot.run(press(list?.message as Message, `memory:del:${metric?.id}`));
    expect(lastCall("answerCallbackQuery")?.body).toMatchObject({
      text: "Forgotten: prefers metric units",
    });
    const edited = lastCall("editMessageText");
    expect(edited?.body.text).toContain("1. Daughter Mia, born 2019");
    expect(edited?.body.text).not.toContain("metric");
    expect((await h.app.profiles.list(`private-${USER}`)).map((e) => e.fact)).toEqual([
      "Daughter Mia, born 2019",
    ]);
    // A button pressed in a group cannot delete a private entry.
    const inGroup = { ...(list?.message as Message), chat: { id: GROUP, type: "supergroup" } };
    await bot.run(press(inGroup as Message, `memory:del:${mia?.id}`));
    expect(lastCall("answerCallbackQuery")?.body).toMatchObject({
      text: "That fact is gone already",
    });
    expect(await h.app.profiles.list(`private-${USER}`)).toHaveLength(1);
  });

  it("/forget removes matching entries, and hides matching messages only once confirmed", async () => {
    const scope = scopeOfKey(`${USER}:9`);
    const asking = { chatId: `${USER}:9`, scope };
    expect(await h.app.recall.search(asking, "Mia", { limit: 10 })).not.toEqual([]);
    await say("/forget mia", { threadId: 5 });
    const offer = telegram.sent.at(-1);
    expect(offer?.plain_text).toMatch(
      /^🗑 Removed from what I remember: Daughter Mia, born 2019\n\d+ stored messages have all of “mia”\. Hide them from my recall\?/,
    );
    expect(await h.app.profiles.list(`private-${USER}`)).toEqual([]);
    // Not confirmed yet: still found.
    expect(await h.app.recall.search(asking, "Mia", { limit: 10 })).not.toEqual([]);
    const button = offer?.message.reply_markup?.inline_keyboard[0]?.[0];
    const data = (button as { callback_data: string }).callback_data;
    const rowsBefore = await h.app.database.db
      .selectFrom("messages")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    await bot.run(press(offer?.message as Message, data));
    expect(lastCall("editMessageText")?.body.text).toMatch(
      /^🙈 Hid \d+ messages with all of “mia” from my recall\.$/,
    );
    expect(await h.app.recall.search(asking, "Mia", { limit: 10 })).toEqual([]);
    const rowsAfter = await h.app.database.db
      .selectFrom("messages")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(rowsAfter.n)).toBe(Number(rowsBefore.n));
    await bot.run(press(offer?.message as Message, data));
    expect(lastCall("editMessageText")?.body.text).toContain("were hidden before");
    await say("/forget zanzibar", { threadId: 5 });
    expect(telegram.sent.at(-1)?.plain_text).toBe(
      "No fact I remember has all of “zanzibar”.\nNo stored message or summary has all of “zanzibar” either.",
    );
  });

  it("/forget deletes the summaries of the scope's memory files that have the words, once confirmed", async () => {
    const memoryDir = h.dirs.memory;
    const day = "05-03-2025";
    const write = (chatId: string, text: string) =>
      appendMemory({ memoryDir, chatId, at: new Date(2025, 2, 5, 10, 0), text });
    await write(`${USER}:7`, "The user's sister recommended Trattoria Lupa.");
    await write(`${USER}:7`, "They planned a trip to Porto.");
    await write(String(USER), "Dinner at the trattoria was booked.\nLupa, on Friday.");
    await write(String(GROUP), "The group liked Trattoria Lupa too.");
    await h.app.store.append(`${USER}:7`, [{ event: said("book Trattoria Lupa for Friday") }]);
    const confirm = async () => {
      const offer = telegram.sent.at(-1);
      const button = offer?.message.reply_markup?.inline_keyboard[0]?.[0];
      const data = (button as { callback_data: string }).callback_data;
      await bot.run(press(offer?.message as Message, data));
      return lastCall("editMessageText")?.body.text;
    };

    await say("/forget trattoria lupa", { threadId: 8 });
    expect(telegram.sent.at(-1)?.plain_text).toBe(
      "No fact I remember has all of “trattoria lupa”.\n1 stored message and 2 summaries in my memory files have all of “trattoria lupa”. Hide them from my recall? The messages stay stored, marked as forgotten, and I will not find them again; the summaries are deleted.",
    );
    // Asked, not yet confirmed: nothing is deleted.
    expect(await readMemory(memoryDir, String(USER), day)).not.toBeNull();
    expect(await confirm()).toBe(
      "🙈 Hid 1 message with all of “trattoria lupa” from my recall, and deleted 2 summaries in my memory files.",
    );
    expect(await readMemory(memoryDir, `${USER}:7`, day)).toBe(
      "[10:00]: They planned a trip to Porto.\n\n",
    );
    expect(await readMemory(memoryDir, String(USER), day)).toBeNull();
    // Another scope's memory is its own.
    expect(await readMemory(memoryDir, String(GROUP), day)).toBe(
      "[10:00]: The group liked Trattoria Lupa too.\n\n",
    );

    // Only a summary has the word: no message to hide, the summary to delete.
    await say("/forget porto", { threadId: 8 });
    expect(telegram.sent.at(-1)?.plain_text).toBe(
      "No fact I remember has all of “porto”.\n1 summary in my memory files has all of “porto”. Delete it from my memory files?",
    );
    expect(await confirm()).toBe("🙈 Deleted 1 summary with all of “porto” from my memory files.");
    expect(await readMemory(memoryDir, `${USER}:7`, day)).toBeNull();
  });

  it("compaction consolidates the profile with the summary model", async () => {
    await h.app.profiles.remember(`private-${USER}`, "lives in Lyon");
    await h.app.profiles.remember(`private-${USER}`, "lives in Lyon, France");
    h.fake.scriptFor(
      SUMMARY_MODEL,
      text("The user moved from Lyon to Porto."),
      text("- lives in Porto, Portugal\n- likes trams"),
    );
    h.fake.setDefault(text("ok"));
    for (let i = 0; i < 3; i++) await say(`message ${i}`, { threadId: 6 });
    expect((await h.app.compactor.compact(`${USER}:6`)).status).toBe("compacted");
    expect((await h.app.profiles.list(`private-${USER}`)).map((e) => e.fact)).toEqual([
      "lives in Porto, Portugal",
      "likes trams",
    ]);
    const consolidation = h.fake.requests.filter((r) => r.model === SUMMARY_MODEL).at(-1);
    expect(JSON.stringify(consolidation?.body.contents)).toContain("lives in Lyon, France");
  });

  it("/memory shows a full profile in as many messages as it takes, and its buttons still work", async () => {
    const scope = `private-${USER}`;
    for (const entry of await h.app.profiles.list(scope))
      await h.app.profiles.remove(scope, entry.id);
    // 40 facts of 98 characters: over one message, and under it once one is deleted.
    for (let i = 0; i < PROFILE_BUDGET.entries; i++) {
      const fact = `fact ${String(i).padStart(2, "0")} ${"x".repeat(90)}`;
      expect((await h.app.profiles.remember(scope, fact)).status).toBe("added");
    }
    const before = telegram.sent.length;
    await say("/memory", { threadId: 4 });
    const pieces = telegram.sent.slice(before);
    expect(pieces).toHaveLength(2);
    expect(pieces.map((m) => m.plain_text).join("\n")).toContain(`40. fact 39 ${"x".repeat(90)}`);
    expect(pieces.map((m) => m.body.message_thread_id)).toEqual([4, 4]);
    expect(pieces.map((m) => m.message.reply_markup?.inline_keyboard.length ?? 0)).toEqual([
      0,
      PROFILE_BUDGET.entries,
    ]);
    const [first] = await h.app.profiles.list(scope);
    const last = pieces.at(-1)?.message as Message;
    await bot.run(press(last, `memory:del:${first?.id}`));
    expect(lastCall("answerCallbackQuery")?.body).toMatchObject({
      text: expect.stringMatching(/^Forgotten: fact 00/),
    });
    // The list fits one message now, but the pressed one was its second piece: editing it alone
    // would leave the first showing the deleted fact, so the list comes again, whole.
    expect(lastCall("editMessageText")?.body).toMatchObject({
      message_id: last.message_id,
      text: "Updated: the list is below.",
    });
    const again = telegram.sent.at(-1);
    expect(again?.plain_text).toMatch(/^🧠 What I remember \(39 of at most 40\)\n1\. fact 01/);
    expect(again?.message.reply_markup?.inline_keyboard).toHaveLength(PROFILE_BUDGET.entries - 1);
    for (const entry of await h.app.profiles.list(scope))
      await h.app.profiles.remove(scope, entry.id);
  });
});
