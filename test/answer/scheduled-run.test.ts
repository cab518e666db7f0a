import { Api } from "grammy";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDelivery } from "../../src/answer/delivery.js";
import { createScheduledRunner, type ScheduledRunner } from "../../src/answer/scheduled-run.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type Inbox, type InboxItem } from "../../src/queue/inbox.js";
import { createRunningAnswers, type RunningAnswers } from "../../src/queue/running-answers.js";
import { historyLines } from "../../src/session/history-view.js";
import {
  createTaskStore,
  type NewTask,
  scheduledRunOf,
  type TaskStore,
} from "../../src/tasks/store.js";
import { status, text } from "../fakes/gemini.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { type Harness, startHarness } from "../helpers/harness.js";
import { STAMP } from "../helpers/stamps.js";

const ZONE = "Europe/Berlin";
// Thursday 3 December 2026, 09:00 in Berlin.
const NINE = Date.parse("2026-12-03T08:00:00Z");
const MINUTE = 60_000;

describe("running scheduled tasks", () => {
  let h: Harness;
  let telegram: FakeTelegram;
  let tasks: TaskStore;
  let inbox: Inbox;
  let runner: ScheduledRunner;
  let answers: RunningAnswers;
  const ALLOWED_CREATOR = 4242;
  let clock = NINE;
  let chat = 0;

  beforeAll(async () => {
    h = await startHarness();
    telegram = await startFakeTelegram();
    const api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
    tasks = createTaskStore({ db: h.app.database.db, kind: h.app.database.kind, now: () => clock });
    inbox = createInbox({
      db: h.app.database.db,
      kind: h.app.database.kind,
      workerId: "w",
      leaseMs: 30_000,
      now: () => clock,
      scrub: createScrubber([]),
    });
    answers = createRunningAnswers();
    runner = createScheduledRunner({
      allowedUserIds: [ALLOWED_CREATOR],
      tasks,
      agent: h.app.agent,
      delivery: createDelivery({ api, logger: h.app.logger }),
      readAttachments: h.app.attachments.read,
      live: { api, mode: "auto" },
      answers,
      logger: h.app.logger,
      now: () => clock,
    });
  });
  afterAll(async () => {
    await telegram.close();
    await h.close();
  });
  beforeEach(() => {
    clock = NINE;
    chat++;
    telegram.forgetCalls();
  });

  const taskIn = (conversation: string, fields: Partial<NewTask> = {}): NewTask => {
    const [chatId, threadId] = conversation.split(":").map(Number);
    return {
      conversation,
      chatId: chatId as number,
      threadId,
      instruction: "Call the bank",
      mode: "remind",
      repeatText: undefined,
      recurrence: undefined,
      timeZone: ZONE,
      nextRunAt: NINE,
      ...fields,
    };
  };

  /** Queues what is due at the clock and runs the claimed run, as the dispatcher would. */
  async function runDue(): Promise<InboxItem> {
    const queuedFor = await tasks.queueDue(clock);
    expect(queuedFor).toHaveLength(1);
    const item = await inbox.claim();
    if (!item) throw new Error("expected a queued run");
    // The dispatcher is told the run's conversation: the inbox's chat of the queued item.
    expect(queuedFor).toEqual([item.chatId]);
    const run = scheduledRunOf(item.update);
    if (!run) throw new Error("expected a scheduled run");
    await runner.run(item, inbox.leaseOf(item), run);
    expect(await inbox.finish(item)).toBe(true);
    return item;
  }

  it("sends a plain reminder without a model call, and stores it as a scheduled task's turn", async () => {
    const conversation = String(1000 + chat);
    await tasks.add(taskIn(conversation));
    const before = h.fake.requests.length;
    await runDue();
    expect(h.fake.requests.length).toBe(before);
    expect(telegram.sent.map((m) => m.plain_text)).toEqual(["⏰ Call the bank"]);
    const lines = historyLines(await h.app.store.lastTurns(conversation, 5));
    expect(lines.map((l) => l.kind)).toEqual(["task", "assistant"]);
    expect(lines[0]).toMatchObject({ text: expect.stringContaining("[Scheduled reminder #") });
  });

  it("runs a task as a model turn marked as scheduled, answered in its topic", async () => {
    const conversation = `-100${chat}:77`;
    await tasks.add(taskIn(conversation, { mode: "run", instruction: "Summarise notes.txt" }));
    h.fake.script(text("Here is the summary."));
    await runDue();
    const request = h.fake.requests.at(-1);
    const last = request?.body.contents.at(-1);
    expect(last?.role).toBe("user");
    expect(last?.parts?.[0]?.text).toMatch(STAMP);
    expect(last?.parts?.[1]?.text).toMatch(
      /^\[Scheduled task #\d+, due at 09:00\. Nobody typed this now.*\]\nSummarise notes\.txt$/,
    );
    expect(telegram.sent).toHaveLength(1);
    expect(telegram.sent[0]).toMatchObject({
      chat_id: -Number(`100${chat}`),
      plain_text: "Here is the summary.",
      body: { message_thread_id: 77 },
    });
  });

  it("streams a task's answer in a private chat as a draft, then sends it once", async () => {
    const chatId = 6000 + chat;
    await tasks.add(taskIn(String(chatId), { mode: "run", instruction: "Write the digest" }));
    const digest = "Today: three meetings, one deadline, and the bank at four.";
    h.fake.script({ ...text(digest), stream: { chunkChars: 8, chunkDelayMs: 60 } });
    await runDue();
    const drafts = telegram.drafts.filter((d) => d.chat_id === chatId);
    expect(drafts.length).toBeGreaterThan(0);
    expect(digest.startsWith(drafts[0]?.plain_text ?? "")).toBe(true);
    expect(telegram.sent.map((m) => m.plain_text)).toEqual([digest]);
  });

  it("stops a task's answer when the conversation's answer is stopped", async () => {
    const conversation = String(7000 + chat);
    await tasks.add(taskIn(conversation, { mode: "run", instruction: "Write a long story" }));
    const story = "Once upon a time ".repeat(40);
    h.fake.script({ ...text(story), stream: { chunkChars: 17, chunkDelayMs: 40 } });
    const drafted = telegram.waitFor("sendMessageDraft");
    const running = runDue();
    await drafted;
    expect(answers.runningIn(conversation)?.stop()).toBe(true);
    await running;
    const [answer] = telegram.sent.map((m) => m.plain_text);
    expect(telegram.sent).toHaveLength(1);
    expect(answer?.length).toBeLessThan(story.length);
    expect(story.startsWith(answer?.trim() ?? "x")).toBe(true);
  });

  it("says a run is late, and a recurring task continues from its next occurrence", async () => {
    const conversation = String(2000 + chat);
    const task = await tasks.add(
      taskIn(conversation, {
        repeatText: "daily",
        recurrence: { kind: "cron", expression: "0 9 * * *" },
        nextRunAt: NINE - 2 * 24 * 60 * MINUTE,
      }),
    );
    clock = NINE + 30 * MINUTE;
    await runDue();
    expect(telegram.sent.map((m) => m.plain_text)).toEqual([
      "⏰ Call the bank\n\n(this was due at 09:00 on Tue 1 Dec)",
    ]);
    // One late run, not three: the next is tomorrow at 9:00.
    expect((await tasks.get(task.id))?.nextRunAt).toBe(NINE + 24 * 60 * MINUTE);
    expect(await tasks.queueDue(clock)).toHaveLength(0);
  });

  it.each([
    [
      "a daily task",
      { recurrence: { kind: "cron", expression: "0 9 * * *" }, repeatText: "daily" },
    ],
    ["a one-shot task", {}],
  ] as const)("skips a run of %s cancelled after it was queued", async (_, repeat) => {
    const conversation = String(3000 + chat);
    const task = await tasks.add(taskIn(conversation, repeat));
    expect(await tasks.queueDue(clock)).toHaveLength(1);
    expect(await tasks.cancel(conversation, task.id)).toMatchObject({ status: "cancelled" });
    const item = await inbox.claim();
    const run = item && scheduledRunOf(item.update);
    if (!item || !run) throw new Error("expected the queued run");
    await runner.run(item, inbox.leaseOf(item), run);
    await inbox.finish(item);
    expect(telegram.sent).toEqual([]);
  });

  it("cancels no one-shot task whose run has run", async () => {
    const conversation = String(3500 + chat);
    const task = await tasks.add(taskIn(conversation));
    await runDue();
    expect(telegram.sent.map((m) => m.plain_text)).toEqual(["⏰ Call the bank"]);
    expect(await tasks.cancel(conversation, task.id)).toBeUndefined();
    expect(await tasks.get(task.id)).toMatchObject({ status: "done" });
  });

  it("skips and disables a task whose creator is no longer allowed, saying so in the log", async () => {
    const conversation = `-100${5000 + chat}`;
    const task = await tasks.add(
      taskIn(conversation, {
        mode: "run",
        createdBy: 777,
        recurrence: { kind: "cron", expression: "0 9 * * *" },
        repeatText: "daily",
      }),
    );
    const before = h.fake.requests.length;
    await runDue();
    expect(h.fake.requests.length).toBe(before);
    expect(telegram.sent).toEqual([]);
    expect(await tasks.get(task.id)).toMatchObject({ status: "disabled", nextRunAt: undefined });
    expect(h.logs).toContainEqual(
      expect.objectContaining({
        msg: "disabled a scheduled task: whoever set it up is no longer in ALLOWED_USER_IDS",
        task_id: task.id,
        created_by: 777,
      }),
    );
    // Its allowed creator's task runs.
    await tasks.add(taskIn(conversation, { createdBy: ALLOWED_CREATOR }));
    clock += 60_000;
    await runDue();
    expect(telegram.sent.map((m) => m.plain_text)).toEqual(["⏰ Call the bank"]);
  });

  it.each([
    [403, "Forbidden: bot was blocked by the user"],
    [400, "Bad Request: not enough rights to send text messages to the chat"],
    [400, "Bad Request: TOPIC_CLOSED"],
  ])(
    "disables a task Telegram refuses with %i %s, with a log line, instead of retrying",
    async (code, description) => {
      const conversation = String(4000 + chat);
      const task = await tasks.add(
        taskIn(conversation, {
          recurrence: { kind: "cron", expression: "0 9 * * *" },
          repeatText: "daily",
        }),
      );
      telegram.failNext("sendMessage", { error_code: code, description });
      const logged = h.logs.length;
      await runDue();
      expect(await tasks.get(task.id)).toMatchObject({
        status: "disabled",
        nextRunAt: undefined,
      });
      expect(h.logs.slice(logged).map((l) => l.msg)).toContain(
        "disabled a scheduled task: its chat no longer accepts the bot's messages",
      );
    },
  );

  it("delivers the stored answer once when the run dies between the model's answer and its delivery", async () => {
    const conversation = String(5000 + chat);
    await tasks.add(taskIn(conversation, { mode: "run", instruction: "Check the weather" }));
    h.fake.script(text("Sunny all day."));
    const before = h.fake.requests.length;
    telegram.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" });
    expect(await tasks.queueDue(clock)).toHaveLength(1);
    const first = await inbox.claim();
    const run = first && scheduledRunOf(first.update);
    if (!first || !run) throw new Error("expected the queued run");
    await expect(runner.run(first, inbox.leaseOf(first), run)).rejects.toThrow();
    // The worker is gone: its lease runs out and another claims the run.
    clock += 31_000;
    const second = await inbox.claim();
    expect(second?.updateId).toBe(first.updateId);
    if (!second) throw new Error("expected the run again");
    await runner.run(second, inbox.leaseOf(second), run);
    await inbox.finish(second);
    expect(h.fake.requests.length - before).toBe(1);
    expect(telegram.sent.map((m) => m.plain_text)).toEqual(["Sunny all day."]);
  });

  it("disables a task whose run Gemini refused when the apology finds the chat gone", async () => {
    const conversation = String(6500 + chat);
    const task = await tasks.add(
      taskIn(conversation, { mode: "run", instruction: "Plan my week" }),
    );
    h.fake.script(status(400, "Request contains an invalid argument."));
    telegram.failNext("sendMessage", {
      error_code: 403,
      description: "Forbidden: bot was blocked by the user",
    });
    await runDue();
    expect(await tasks.get(task.id)).toMatchObject({ status: "disabled" });
    expect(telegram.sent).toEqual([]);
  });

  it("tells the topic when Gemini refuses a run, and when the inbox gives up on one", async () => {
    const conversation = `-100${6000 + chat}:9`;
    await tasks.add(taskIn(conversation, { mode: "run", instruction: "Plan my week" }));
    h.fake.script(status(400, "Request contains an invalid argument."));
    const item = await runDue();
    expect(telegram.sent.at(-1)).toMatchObject({
      plain_text: expect.stringMatching(/^Scheduled task #\d+ could not run: /),
      body: { message_thread_id: 9 },
    });
    const run = scheduledRunOf(item.update);
    if (!run) throw new Error("expected a scheduled run");
    await runner.tellGaveUp(run);
    expect(telegram.sent.at(-1)).toMatchObject({
      plain_text: expect.stringMatching(
        /^Sorry, scheduled task #\d+ could not run: something kept failing/,
      ),
      body: { message_thread_id: 9 },
    });
  });
});
