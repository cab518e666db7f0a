import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApprovalStore } from "../../src/approvals/store.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox } from "../../src/queue/inbox.js";
import { isoInZone } from "../../src/tasks/schedule.js";
import {
  createTaskStore,
  SCHEDULED_UPDATE_BASE,
  scheduledRunOf,
  type TaskStore,
} from "../../src/tasks/store.js";
import { createTaskTools, DEFAULT_TASK_LIMITS } from "../../src/tasks/tools.js";
import {
  createToolRegistry,
  type ToolContext,
  type ToolRegistry,
} from "../../src/tools/registry.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";
import { toolContext } from "../helpers/tool-context.js";

const ZONE = "Europe/Berlin";
// Wednesday 2 December 2026, 14:10 in Berlin.
const START = Date.parse("2026-12-02T13:10:00Z");
const HOUR = 3_600_000;

describe.each(DATABASE_KINDS)("scheduled task tools on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let tasks: TaskStore;
  let registry: ToolRegistry;
  let clock = START;
  let conversation = 0;
  /** What the tools told the scheduler. */
  const added: { chatId: string; firstRunAt: number }[] = [];
  /** A conversation of its own for each test: the tests share one database. */
  let ctx: ToolContext = toolContext("local");
  /** The inbox the scheduler queues runs into, on the test's clock. */
  const inboxAtClock = () =>
    createInbox({
      db: handle.db,
      kind,
      workerId: "w",
      leaseMs: 30_000,
      now: () => clock,
      scrub: createScrubber([]),
    });

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, captureLogger().logger);
    tasks = createTaskStore({ db: handle.db, kind, now: () => clock });
    registry = createToolRegistry(
      createTaskTools({
        tasks,
        timeZone: ZONE,
        now: () => clock,
        limits: { ...DEFAULT_TASK_LIMITS, maxTasks: 3 },
        onAdded: (chatId, firstRunAt) => added.push({ chatId, firstRunAt }),
      }),
    );
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });
  beforeEach(async () => {
    // The scheduler queues every conversation's due tasks: earlier tests' must not join in.
    await handle.db
      .updateTable("tasks")
      .set({ status: "cancelled", next_run_at: null })
      .where("status", "=", "active")
      .execute();
    clock = START;
    conversation++;
    ctx = toolContext(`-100${conversation}:7`);
  });

  /** The inbox the scheduler queues runs into, on the test's clock. */
  const call = (name: string, args: unknown) => registry.execute(name, args, ctx);
  async function output(name: string, args: unknown): Promise<Record<string, unknown>> {
    const outcome = await call(name, args);
    if (!outcome.ok) throw new Error(`expected ${name} to work: ${outcome.response.error}`);
    return outcome.response.output as Record<string, unknown>;
  }
  async function error(name: string, args: unknown): Promise<string> {
    const outcome = await call(name, args);
    if (outcome.ok) throw new Error(`expected ${name} to fail`);
    return outcome.response.error;
  }

  it("schedules a one-shot reminder and answers its exact next run in the zone", async () => {
    const out = await output("schedule_task", {
      when: "tomorrow 9:00",
      instruction: "Call the bank",
      mode: "remind",
    });
    expect(out).toEqual({
      scheduled: {
        id: expect.any(Number),
        instruction: "Call the bank",
        mode: "remind",
        repeat: "once",
        next_run: "2026-12-03T09:00:00+01:00",
        next_run_local: "Thu 3 Dec 2026, 09:00 (Europe/Berlin)",
      },
    });
    const [task] = await tasks.listActive(ctx.chatId);
    expect(task).toMatchObject({ chatId: Number(`-100${conversation}`), threadId: 7 });
    // The scheduler hears of it, to queue it on time.
    expect(added.at(-1)).toEqual({ chatId: ctx.chatId, firstRunAt: task?.nextRunAt });
  });

  it("schedules a recurring run from `when`'s time of day and says the run after", async () => {
    const out = await output("schedule_task", {
      when: "2026-12-07T08:00",
      repeat: "weekly on mon",
      instruction: "Summarise notes.txt",
    });
    expect(out).toMatchObject({
      scheduled: {
        mode: "run",
        repeat: "weekly on mon (cron 0 8 * * 1)",
        next_run_local: "Mon 7 Dec 2026, 08:00 (Europe/Berlin)",
      },
      run_after_that: "Mon 14 Dec 2026, 08:00 (Europe/Berlin)",
    });
  });

  // Asked at 14:10:42: "now" is today's 14:10 run, not tomorrow's. A 02:30 set for the
  // spring-forward night runs when the gap ends (03:00), and at 02:30 after it.
  it.each([
    [
      "in 1 hour",
      START + 42_000,
      "2026-12-02T15:10:00+01:00",
      "Thu 3 Dec 2026, 15:10 (Europe/Berlin)",
    ],
    ["now", START + 42_000, "2026-12-02T14:10:00+01:00", "Thu 3 Dec 2026, 14:10 (Europe/Berlin)"],
    [
      "tomorrow 2:30",
      Date.parse("2026-03-28T08:00:00Z"),
      "2026-03-29T03:00:00+02:00",
      "Mon 30 Mar 2026, 02:30 (Europe/Berlin)",
    ],
  ])("starts a daily task %j with the run it names", async (when, at, first, second) => {
    clock = at;
    const out = await output("schedule_task", { when, repeat: "daily", instruction: "x" });
    expect(out).toMatchObject({ scheduled: { next_run: first }, run_after_that: second });
  });

  it("starts a cron task at its first match after now", async () => {
    const out = await output("schedule_task", {
      when: "now",
      repeat: "0 9 * * 1-5",
      instruction: "Check the weather",
    });
    expect(out).toMatchObject({
      scheduled: { next_run_local: "Thu 3 Dec 2026, 09:00 (Europe/Berlin)" },
    });
  });

  it("refuses a time in the past, an unreadable one, and a too-frequent repetition", async () => {
    expect(await error("schedule_task", { when: "2026-12-01T09:00", instruction: "x" })).toMatch(
      /Tue 1 Dec 2026, 09:00 \(Europe\/Berlin\) has passed \(it is now Wed 2 Dec 2026, 14:10/,
    );
    expect(await error("schedule_task", { when: "soonish", instruction: "x" })).toMatch(
      /Cannot read the time "soonish"\. Accepted forms:/,
    );
    expect(
      await error("schedule_task", { when: "now", repeat: "every 5 minutes", instruction: "x" }),
    ).toMatch(/more often than every 15 minutes/);
    expect(
      await error("schedule_task", { when: "now", repeat: "*/10 * * * *", instruction: "x" }),
    ).toMatch(/more often than every 15 minutes/);
    expect(await tasks.listActive(ctx.chatId)).toEqual([]);
  });

  it("allows a set number of active tasks per conversation; a cancelled one frees its place", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const out = await output("schedule_task", { when: `in ${i + 1} hours`, instruction: "x" });
      ids.push((out.scheduled as { id: number }).id);
    }
    expect(await error("schedule_task", { when: "in 5 hours", instruction: "x" })).toMatch(
      /already has 3 scheduled tasks, the most allowed: cancel one/,
    );
    expect(await output("cancel_task", { id: ids[1] })).toEqual({
      cancelled: { id: ids[1], instruction: "x" },
    });
    expect(await error("cancel_task", { id: ids[1] })).toMatch(/no scheduled task/);
    await output("schedule_task", { when: "in 5 hours", instruction: "y" });
  });

  it("cancels a one-shot task whose run is queued but has not started, and not once it has", async () => {
    const inbox = inboxAtClock();
    /** Schedules a one-shot task 5 minutes ahead, then lets those minutes pass and queues its run. */
    const queuedOneShot = async (instruction: string) => {
      const out = await output("schedule_task", { when: "in 5 minutes", instruction });
      clock += 5 * 60_000;
      expect(await tasks.queueDue(clock)).toHaveLength(1);
      return (out.scheduled as { id: number }).id;
    };
    /** Claims the next run, which must be `taskId`'s. */
    const claimRunOf = async (taskId: number) => {
      const item = await inbox.claim();
      expect(item && scheduledRunOf(item.update)?.scheduled_task.task_id).toBe(taskId);
      if (!item) throw new Error("expected a queued run");
      return item;
    };
    const started = await queuedOneShot("x");
    const running = await claimRunOf(started);
    expect(await error("cancel_task", { id: started })).toMatch(/no scheduled task/);
    // Given back after it started (a failure of the database, say): it may have sent part already.
    expect(await inbox.release(running, "a failure", 0)).toBe(true);
    expect(await error("cancel_task", { id: started })).toMatch(/no scheduled task/);
    clock += 1;
    await inbox.finish(await claimRunOf(started));
    const waiting = await queuedOneShot("y");
    expect(await output("cancel_task", { id: waiting })).toEqual({
      cancelled: { id: waiting, instruction: "y" },
    });
    // Its run is skipped when it comes (test/answer/scheduled-run.test.ts); no later test claims it.
    await inbox.finish(await claimRunOf(waiting));
  });

  it("holds the limit of active tasks against parallel calls", async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call("schedule_task", { when: `in ${i + 1} hours`, instruction: `parallel ${i}` }),
      ),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(3);
    expect(
      outcomes.filter((o) => !o.ok && /already has 3 scheduled tasks/.test(o.response.error)),
    ).toHaveLength(9);
    expect(await tasks.listActive(ctx.chatId)).toHaveLength(3);
  });

  it("keeps a task set up during a scheduled run from being due within 15 minutes", async () => {
    ctx = { ...ctx, origin: "scheduled_task" };
    for (const args of [
      { when: "now", instruction: "again" },
      { when: "in 14 minutes", instruction: "again" },
      { when: "now", repeat: "every 15 minutes", instruction: "again" },
    ]) {
      expect(await error("schedule_task", args)).toBe(
        "A task set up during a scheduled run cannot be due within 15 minutes (before Wed 2 Dec 2026, 14:25 (Europe/Berlin)): choose a later time, or do it now, in this run.",
      );
    }
    expect(await tasks.listActive(ctx.chatId)).toEqual([]);
    await output("schedule_task", { when: "in 15 minutes", instruction: "later" });
    await output("schedule_task", { when: "in 1 hour", repeat: "hourly", instruction: "hourly" });
    expect(await tasks.listActive(ctx.chatId)).toHaveLength(2);
  });

  it("refuses times and repetitions more than 10 years ahead, in words", async () => {
    for (const [when, repeat] of [
      ["in 999999999999999 days", undefined],
      ["in 99999999999 minutes", undefined],
      ["2036-12-03T09:00", undefined],
      ["now", "every 99999999999 hours"],
      ["now", "every 87700 hours"],
    ] as const) {
      const asked = repeat ?? when;
      expect(await error("schedule_task", { when, repeat, instruction: "x" })).toBe(
        `"${asked}" is too far ahead: a task can be scheduled at most 10 years ahead, and repeat at least once in 10 years. Choose a nearer time.`,
      );
    }
    expect(await tasks.listActive(ctx.chatId)).toEqual([]);
    const out = await output("schedule_task", { when: "2036-12-02T09:00", instruction: "x" });
    expect(out).toMatchObject({ scheduled: { next_run: "2036-12-02T09:00:00+01:00" } });
    await output("schedule_task", { when: "now", repeat: "every 87600 hours", instruction: "x" });
  });

  it("records who set a task up, and disables the tasks of creators no longer allowed", async () => {
    ctx = { ...ctx, askedBy: 4242 };
    await output("schedule_task", { when: "in 1 hour", instruction: "mine" });
    ctx = { ...ctx, askedBy: 777 };
    await output("schedule_task", { when: "in 2 hours", instruction: "theirs" });
    expect((await tasks.listActive(ctx.chatId)).map((t) => t.createdBy)).toEqual([4242, 777]);
    const disabled = await tasks.disableNotAllowed([4242, 1], "creator not allowed");
    expect(disabled.map((t) => t.instruction)).toEqual(["theirs"]);
    expect((await tasks.listActive(ctx.chatId)).map((t) => t.instruction)).toEqual(["mine"]);
    expect((await tasks.get(disabled[0]?.id ?? 0))?.status).toBe("disabled");
  });

  it("queues at most the hour's runs of a conversation; the rest wait, due, and run later", async () => {
    const held: [string, number][] = [];
    const limited = createTaskStore({
      db: handle.db,
      kind,
      now: () => clock,
      runsPerHour: 3,
      onRunsHeldBack: (conversation, waiting) => held.push([conversation, waiting]),
    });
    const task = (conversation: string, i: number) => ({
      conversation,
      chatId: Number(conversation),
      threadId: undefined,
      instruction: `run ${i}`,
      mode: "remind" as const,
      repeatText: undefined,
      recurrence: undefined,
      timeZone: ZONE,
      nextRunAt: START + i * 1000,
    });
    const busy = String(5000 + conversation);
    const quiet = String(9000 + conversation);
    for (let i = 0; i < 5; i++) await limited.add(task(busy, i));
    await limited.add(task(quiet, 9));
    clock = START + HOUR / 2;
    expect(await limited.queueDue(clock)).toHaveLength(4);
    expect(held).toEqual([[busy, 2]]);
    // Looked at again and again in the hour, the busy conversation's waiting tasks queue nothing
    // (and are not even taken: no second report).
    clock += 60_000;
    expect(await limited.queueDue(clock)).toHaveLength(0);
    expect(held).toHaveLength(1);
    expect((await limited.listActive(busy)).map((t) => t.instruction)).toEqual(["run 3", "run 4"]);
    // An hour after the first runs, the rest run, late, for the time they were due.
    clock = START + HOUR / 2 + HOUR + 1_000;
    expect(await limited.queueDue(clock)).toHaveLength(2);
    const inbox = inboxAtClock();
    const dues: number[] = [];
    for (let item = await inbox.claim(); item; item = await inbox.claim()) {
      dues.push(scheduledRunOf(item.update)?.scheduled_task.due_at ?? 0);
      await inbox.finish(item);
    }
    expect(dues.sort()).toEqual([0, 1, 2, 3, 4, 9].map((i) => START + i * 1000));
  });

  it("lists only this conversation's active tasks, the next first", async () => {
    await output("schedule_task", { when: "in 3 hours", instruction: "later" });
    await output("schedule_task", { when: "in 1 hour", instruction: "sooner" });
    const other = await registry.execute(
      "schedule_task",
      { when: "in 2 hours", instruction: "elsewhere" },
      toolContext("42"),
    );
    expect(other.ok).toBe(true);
    const { tasks: listed } = await output("list_tasks", {});
    expect((listed as { instruction: string }[]).map((t) => t.instruction)).toEqual([
      "sooner",
      "later",
    ]);
    // Another conversation cannot cancel this one's tasks.
    const [mine] = listed as { id: number }[];
    expect((await registry.execute("cancel_task", { id: mine?.id }, toolContext("42"))).ok).toBe(
      false,
    );
  });

  it("moves a conversation's tasks to its new key when its group becomes a supergroup", async () => {
    await output("schedule_task", { when: "in 1 hour", instruction: "x" });
    expect(await tasks.move(ctx.chatId, { conversation: "-1009999", chatId: -1009999 })).toBe(1);
    expect(await tasks.listActive(ctx.chatId)).toEqual([]);
    expect(await tasks.listActive("-1009999")).toMatchObject([{ chatId: -1009999 }]);
  });

  it("refuses a conversation that is not a Telegram chat (the terminal)", async () => {
    const outcome = await registry.execute(
      "schedule_task",
      { when: "in 1 hour", instruction: "x" },
      toolContext("terminal"),
    );
    expect(outcome).toMatchObject({ ok: false, response: { error: /only in the Telegram bot/ } });
  });

  it("queues a due run into the inbox once, and a recurring task's next run after now", async () => {
    await output("schedule_task", { when: "15:00", repeat: "every 2 hours", instruction: "x" });
    clock = START + 10 * HOUR; // 00:10: the 15:00, 17:00, … 23:00 runs were all missed.
    expect(await tasks.queueDue(clock)).toHaveLength(1);
    expect(await tasks.queueDue(clock)).toHaveLength(0);
    const [task] = await tasks.listActive(ctx.chatId);
    expect(task?.nextRunAt).toBe(Date.parse("2026-12-03T00:00:00Z"));
    expect(task?.runs).toBe(1);
    const inbox = inboxAtClock();
    const item = await inbox.claim();
    expect(item?.chatId).toBe(`-100${conversation}:7`);
    expect(item?.updateId).toBeLessThan(SCHEDULED_UPDATE_BASE + 1_000_000);
    expect(scheduledRunOf(item?.update)?.scheduled_task).toEqual({
      task_id: task?.id,
      run_id: expect.any(Number),
      due_at: Date.parse("2026-12-02T14:00:00Z"),
    });
    if (item) await inbox.finish(item);
  });

  it("keeps a conversation's tasks due while a tool call there waits for the user's answer", async () => {
    await output("schedule_task", { when: "in 1 hour", instruction: "x", mode: "remind" });
    const approvals = createApprovalStore(handle.db, () => clock);
    const ask = (eventId: number) =>
      approvals.request([
        {
          conversation: ctx.chatId,
          chatId: -100,
          threadId: 7,
          scope: "local",
          eventId,
          callIndex: 0,
          tool: "run_command",
          args: {},
          askedBy: 1,
          expiresAt: START + 3 * HOUR,
        },
      ]);
    await ask(1);
    clock = START + 2 * HOUR;
    expect(await tasks.queueDue(clock)).toEqual([]);
    expect(await tasks.listActive(ctx.chatId)).toHaveLength(1);
    // Answered: the run goes.
    const [waiting] = await approvals.ofEvent(ctx.chatId, 1);
    await approvals.decide(waiting?.id ?? 0, "allowed", 1);
    expect(await tasks.queueDue(clock)).toEqual([ctx.chatId]);
    // Another task, held by a request nobody answered until it ran out: held until the sweep
    // ends the request (which queues the turn that goes on), not queued ahead of it.
    await output("schedule_task", { when: "in 1 minute", instruction: "y", mode: "remind" });
    await ask(2);
    clock = START + 3 * HOUR + 1_000;
    expect(await tasks.queueDue(clock)).toEqual([]);
    expect(await approvals.expireDue(clock)).toHaveLength(1);
    expect(await tasks.queueDue(clock)).toEqual([ctx.chatId]);
    const inbox = inboxAtClock();
    for (let item = await inbox.claim(); item; item = await inbox.claim()) await inbox.finish(item);
  });

  it("ends a one-shot task once its run is queued", async () => {
    await output("schedule_task", { when: "in 1 hour", instruction: "x", mode: "remind" });
    clock = START + 2 * HOUR;
    expect(await tasks.queueDue(clock)).toHaveLength(1);
    expect(await tasks.listActive(ctx.chatId)).toEqual([]);
    const inbox = inboxAtClock();
    const item = await inbox.claim();
    if (item) await inbox.finish(item);
  });

  it("queues a daily 9:00 run at 9:00 local time on both sides of the spring DST change", async () => {
    clock = Date.parse("2026-03-27T07:00:00Z");
    await output("schedule_task", { when: "09:00", repeat: "daily", instruction: "x" });
    const inbox = inboxAtClock();
    const dues: string[] = [];
    for (const at of ["2026-03-27T08:00:05Z", "2026-03-28T08:00:05Z", "2026-03-29T07:00:05Z"]) {
      clock = Date.parse(at);
      expect(await tasks.queueDue(clock)).toHaveLength(1);
      const item = await inbox.claim();
      dues.push(isoInZone(scheduledRunOf(item?.update)?.scheduled_task.due_at ?? 0, ZONE));
      if (item) await inbox.finish(item);
    }
    expect(dues).toEqual([
      "2026-03-27T09:00:00+01:00",
      "2026-03-28T09:00:00+01:00",
      "2026-03-29T09:00:00+02:00",
    ]);
    expect((await tasks.listActive(ctx.chatId))[0]?.nextRunAt).toBe(
      Date.parse("2026-03-30T07:00:00Z"),
    );
  });
});
