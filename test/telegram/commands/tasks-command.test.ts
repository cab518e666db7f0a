import type { Message } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewTask } from "../../../src/tasks/store.js";
import { routeUpdate } from "../../../src/telegram/access.js";
import { COMMANDS } from "../../../src/telegram/commands/command-list.js";
import { buildTextUpdate, type FakeTelegram, startFakeTelegram } from "../../fakes/telegram.js";
import { botOnHarness, buttonPress } from "../../helpers/bot.js";
import { CHAT_MODEL, type Harness, startHarness } from "../../helpers/harness.js";

const USER = 6160;
const GROUP = -1009001;
const THREAD = 42;
const ZONE = "Europe/Berlin";

describe("/tasks", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  let bot: ReturnType<typeof botOnHarness>["bot"];
  let updateId = 0;

  beforeAll(async () => {
    h = await startHarness();
    telegram = await startFakeTelegram();
    ({ bot } = botOnHarness(h, telegram, {
      allowedUserIds: [USER],
      settings: { model: CHAT_MODEL, maxEvents: 30, maxTokens: 0, timeZone: "UTC" },
    }));
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });

  const say = (text: string, threadId?: number) => {
    const id = ++updateId;
    return bot.run(
      buildTextUpdate({ updateId: id, messageId: id, text, userId: USER, chatId: GROUP, threadId }),
    );
  };
  const task = (instruction: string, fields: Partial<NewTask> = {}): NewTask => ({
    conversation: `${GROUP}:${THREAD}`,
    chatId: GROUP,
    threadId: THREAD,
    instruction,
    mode: "remind",
    repeatText: undefined,
    recurrence: undefined,
    timeZone: ZONE,
    nextRunAt: Date.parse("2026-12-03T08:00:00Z"),
    ...fields,
  });
  const press = (message: Message, data: string) => buttonPress(++updateId, USER, message, data);

  it("is registered with the commands and listed in /help", () => {
    expect(COMMANDS.map((c) => c.command)).toContain("tasks");
  });

  it("lists the topic's tasks with their next run and a cancel button each, in that topic", async () => {
    const bank = await h.app.tasks.add(task("Call the bank"));
    const notes = await h.app.tasks.add(
      task("Summarise notes.txt", {
        mode: "run",
        repeatText: "weekly on mon",
        recurrence: { kind: "cron", expression: "0 8 * * 1" },
        nextRunAt: Date.parse("2026-12-07T07:00:00Z"),
      }),
    );
    await h.app.tasks.add(task("elsewhere", { conversation: String(GROUP), threadId: undefined }));
    await say("/tasks", THREAD);
    const list = telegram.sent.at(-1);
    expect(list?.body.message_thread_id).toBe(THREAD);
    expect(list?.plain_text).toBe(
      [
        "Scheduled tasks (2)",
        `⏰ #${bank.id} Call the bank`,
        "    next: Thu 3 Dec 2026, 09:00 (Europe/Berlin) · once",
        `🤖 #${notes.id} Summarise notes.txt`,
        "    next: Mon 7 Dec 2026, 08:00 (Europe/Berlin) · weekly on mon (cron 0 8 * * 1)",
      ].join("\n"),
    );
    expect(list?.message.reply_markup?.inline_keyboard).toEqual([
      [{ text: `Cancel #${bank.id}`, callback_data: `tasks:cancel:${bank.id}` }],
      [{ text: `Cancel #${notes.id}`, callback_data: `tasks:cancel:${notes.id}` }],
    ]);

    // The button is routed into the inbox as the topic's, and cancels the task.
    const pressed = press(list?.message as Message, `tasks:cancel:${bank.id}`);
    expect(routeUpdate(pressed, new Set([USER]), telegram.bot)).toEqual({
      action: "run",
      conversation: `${GROUP}:${THREAD}`,
    });
    expect(routeUpdate(pressed, new Set([USER + 1]), telegram.bot)).toMatchObject({
      action: "ignore",
      who: USER,
    });
    await bot.run(pressed);
    const answer = telegram.calls.find((c) => c.method === "answerCallbackQuery");
    expect(answer?.body).toMatchObject({ text: `Cancelled task #${bank.id}` });
    expect(telegram.sent.at(-1)).toMatchObject({
      plain_text: `🗑 Cancelled task #${bank.id}: Call the bank`,
      body: { message_thread_id: THREAD },
    });
    expect((await h.app.tasks.get(bank.id))?.status).toBe("cancelled");

    // Pressed again: nothing left to cancel, and it says so.
    await bot.run(press(list?.message as Message, `tasks:cancel:${bank.id}`));
    expect(
      telegram.calls.filter((c) => c.method === "answerCallbackQuery").at(-1)?.body,
    ).toMatchObject({
      text: `Task #${bank.id} is no longer scheduled`,
    });
  });

  it("cancels with /tasks cancel <id>, only in the task's own conversation", async () => {
    const t = await h.app.tasks.add(task("Water the plants"));
    await say(`/tasks cancel ${t.id}`);
    expect(telegram.sent.at(-1)?.plain_text).toMatch(`no scheduled task #${t.id}`);
    await say(`/tasks cancel ${t.id}`, THREAD);
    expect(telegram.sent.at(-1)?.plain_text).toBe(`🗑 Cancelled task #${t.id}: Water the plants`);
    await say("/tasks cancel everything", THREAD);
    expect(telegram.sent.at(-1)?.plain_text).toBe("Usage: /tasks, or /tasks cancel <id>.");
  });

  it("lists as many tasks as a conversation may have in as many messages as they take", async () => {
    const long = Array.from({ length: 20 }, (_, i) =>
      task(`${String(i).padStart(2, "0")} ${"check the weather and the tides ".repeat(6)}`, {
        conversation: `${GROUP}:8`,
        threadId: 8,
        repeatText: "weekdays",
        recurrence: { kind: "cron", expression: "30 7 * * 1-5" },
      }),
    );
    for (const t of long) await h.app.tasks.add(t);
    const before = telegram.sent.length;
    await say("/tasks", 8);
    const pieces = telegram.sent.slice(before);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.every((m) => m.plain_text.length <= 4096)).toBe(true);
    expect(pieces.map((m) => m.plain_text).join("\n")).toMatch(/#\d+ 19 check the weather/);
    expect(pieces.map((m) => m.message.reply_markup?.inline_keyboard.length ?? 0)).toEqual([
      ...pieces.slice(1).map(() => 0),
      20,
    ]);
  });

  it("says when there is nothing scheduled", async () => {
    await say("/tasks", 99);
    expect(telegram.sent.at(-1)?.plain_text).toMatch(/^No scheduled tasks in this conversation/);
  });

  it("/clear disables the conversation's tasks and says so", async () => {
    const t = await h.app.tasks.add(task("Stretch", { conversation: "-1009001:7", threadId: 7 }));
    await say("/clear", 7);
    expect(telegram.sent.at(-1)?.plain_text).toMatch(/Its 1 scheduled task was cancelled\.$/);
    expect(await h.app.tasks.get(t.id)).toMatchObject({ status: "disabled", nextRunAt: undefined });
    expect(
      h.logs.some((l) => l.msg === "disabled the scheduled tasks of a cleared conversation"),
    ).toBe(true);
  });
});
