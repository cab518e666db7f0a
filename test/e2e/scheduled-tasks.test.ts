import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createTaskStore } from "../../src/tasks/store.js";
import { call, combine, type RecordedRequest, text } from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

const plainTexts = (w: ServiceWorld) => w.telegram.sent.map((m) => m.plain_text);
const asks = (r: RecordedRequest, words: string) => JSON.stringify(r.body.contents).includes(words);
const env = { TIME_ZONE: "Europe/Berlin", STREAMING: "off" };

/** The service's SQLite file, opened beside it. */
const database = (w: ServiceWorld) => new SQLite((w.db.target as { path: string }).path);

/** Updates (a task's runs among them) not yet done or failed: once none, nothing more is sent. */
function unfinishedUpdates(w: ServiceWorld): number {
  const db = database(w);
  try {
    const row = db
      .prepare("select count(*) as n from inbox where status in ('pending', 'running')")
      .get() as { n: number };
    return row.n;
  } finally {
    db.close();
  }
}

describe("scheduled tasks in the running service", () => {
  let w: ServiceWorld;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  /** Has the model schedule a task through the real tool, and waits for its confirmation. */
  async function schedule(args: Record<string, unknown>): Promise<void> {
    w.gemini.script(call("schedule_task", args), text("Scheduled."));
    await w.say("please schedule it");
    await eventually(() => plainTexts(w).includes("Scheduled."));
    const answer = w.gemini.requests.at(-1)?.body.contents.at(-1)?.parts?.[0]?.functionResponse;
    expect(answer?.response).toHaveProperty("output.scheduled.next_run_local");
  }

  it("runs a reminder that fell due during a restart once, late, saying so, and moves on to its next occurrence", {
    timeout: 120_000,
  }, async () => {
    w = await startWorld({ env });
    await schedule({
      when: "in 1 hour",
      repeat: "daily",
      instruction: "Check the oven",
      mode: "remind",
    });
    w.service.proc.kill("SIGTERM");
    expect(await w.service.exited).toBe(0);
    // Down for a while: the run was due ten minutes ago.
    const db = database(w);
    const { next_run_at: planned } = db.prepare("select next_run_at from tasks").get() as {
      next_run_at: number;
    };
    const due = Date.now() - 10 * 60_000;
    db.prepare("update tasks set next_run_at = ?").run(due);
    db.close();

    const before = w.gemini.requests.length;
    w.service = await w.start();
    const reminder = await eventually(() =>
      plainTexts(w).find((t) => t.startsWith("⏰ Check the oven")),
    );
    expect(reminder).toMatch(/^⏰ Check the oven\n\n\(this was due at \d\d:\d\d( on .+)?\)$/);
    // Moved on to its next occurrence after now (today's or tomorrow's time of day it was set
    // for), so no later scheduler round can run it again; and its run is finished.
    const task = await eventually(() => {
      const after = database(w);
      const row = after.prepare("select next_run_at, runs from tasks").get() as {
        next_run_at: number;
        runs: number;
      };
      after.close();
      return row.next_run_at === planned && unfinishedUpdates(w) === 0 && row;
    });
    expect(task.runs).toBe(1);
    // No model call for a plain reminder, and one reminder.
    expect(plainTexts(w).filter((t) => t.startsWith("⏰ Check the oven"))).toHaveLength(1);
    expect(w.gemini.requests.length).toBe(before);
  });

  it("delivers a task's answer once after kill -9 between the model's answer and its delivery", {
    timeout: 120_000,
  }, async () => {
    w = await startWorld({ env });
    await schedule({ when: "now", instruction: "Tell me the weather", mode: "run" });
    const held = w.telegram.holdNext("sendMessage");
    w.gemini.script(text("Sunny all day."));
    await held.arrived;
    // The answer is stored and on its way to Telegram: the process dies before it arrives.
    w.service.proc.kill("SIGKILL");
    await w.service.exited;
    await held.hungUp;
    held.release();

    w.service = await w.start();
    await eventually(() => plainTexts(w).includes("Sunny all day."));
    await eventually(() => unfinishedUpdates(w) === 0);
    expect(plainTexts(w).filter((t) => t === "Sunny all day.")).toHaveLength(1);
    // The model was asked once for the run: the second process delivered the stored answer.
    expect(w.gemini.requests.filter((r) => asks(r, "Tell me the weather"))).toHaveLength(2);
    const runRequest = w.gemini.requests.at(-1);
    expect(runRequest && asks(runRequest, "[Scheduled task #")).toBe(true);
  });
});

describe.each(DATABASE_KINDS)("scheduled tasks kept within bounds on %s", (kind) => {
  let w: ServiceWorld;
  let handle: DatabaseHandle | undefined;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await handle?.close();
    handle = undefined;
    await w.close();
  });
  /** The service's database, opened beside it. */
  const db = () => {
    handle ??= openDatabase(w.db.target);
    return handle.db;
  };
  const tasks = () =>
    db()
      .selectFrom("tasks")
      .select(["status", "status_reason", "next_run_at"])
      .orderBy("id")
      .execute();
  const unfinished = async () =>
    Number(
      (
        await db()
          .selectFrom("inbox")
          .select((eb) => eb.fn.countAll().as("n"))
          .where("status", "in", ["pending", "running"])
          .executeTakeFirstOrThrow()
      ).n,
    );
  /** What the model got back from the calls of its last answer. */
  const lastResponses = () =>
    (w.gemini.requests.at(-1)?.body.contents.at(-1)?.parts ?? []).map((p) =>
      JSON.stringify(p.functionResponse?.response),
    );

  it("a scheduled run that schedules itself again 'now' is refused: one run, not a chain", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env });
    const again = { when: "now", instruction: "Do it again", mode: "run" };
    w.gemini.script(
      call("schedule_task", again),
      text("Scheduled."),
      // The run: the model asks for two more, at once, right now.
      combine(call("schedule_task", again), call("schedule_task", again)),
      text("Done."),
    );
    await w.say("do it again and again");
    await eventually(() => plainTexts(w).includes("Done."));
    expect(lastResponses()).toEqual([
      expect.stringContaining(
        "A task set up during a scheduled run cannot be due within 15 minutes",
      ),
      expect.stringContaining(
        "A task set up during a scheduled run cannot be due within 15 minutes",
      ),
    ]);
    await eventually(async () => (await unfinished()) === 0);
    expect(await tasks()).toEqual([{ status: "done", status_reason: null, next_run_at: null }]);
    expect(w.gemini.requests).toHaveLength(4);
  });

  it("a scheduled run that goes on after an approval is still a scheduled run: no chain", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env: { ...env, ENABLE_SHELL_TOOL: "true" } });
    const again = { when: "now", instruction: "Do it again", mode: "run" };
    w.gemini.script(
      call("schedule_task", again),
      text("Scheduled."),
      // The run asks for a command, which waits for the user's Allow once.
      call("run_command", { command: "echo checked" }),
      call("schedule_task", again),
      text("Done."),
    );
    await w.say("do it again and again");
    const prompt = await eventually(() =>
      w.telegram.sent.find((m) => m.plain_text.startsWith("🔐 Koroku wants to run run_command")),
    );
    const once = (prompt.message.reply_markup?.inline_keyboard.flat() ?? [])
      .map((b) => ("callback_data" in b ? String(b.callback_data) : ""))
      .find((data) => data.endsWith(":once")) as string;
    const press = w.telegram.pressButton(ALLOWED_USER, prompt.message_id, once, ALLOWED_USER);
    expect((await w.post({ ...press, update_id: w.nextUpdateId() })).status).toBe(200);
    await eventually(() => plainTexts(w).includes("Done."));
    expect(lastResponses()).toEqual([
      expect.stringContaining(
        "A task set up during a scheduled run cannot be due within 15 minutes",
      ),
    ]);
    await eventually(async () => (await unfinished()) === 0);
    expect(await tasks()).toEqual([{ status: "done", status_reason: null, next_run_at: null }]);
  });

  it("30 parallel calls leave 20 active tasks, and times past 10 years are refused in words", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env: { ...env, MAX_TOOL_CALLS_PER_TURN: "40" } });
    const many = Array.from({ length: 30 }, (_, i) =>
      call("schedule_task", {
        when: `in ${i + 1} hours`,
        instruction: `Task ${i}`,
        mode: "remind",
      }),
    );
    const odd = [
      { when: "in 999999999999999 days" },
      { when: "in 99999999999 minutes" },
      { when: "now", repeat: "every 99999999999 hours" },
    ].map((args) => call("schedule_task", { ...args, instruction: "Odd", mode: "remind" }));
    w.gemini.script(combine(...many, ...odd), text("Scheduled what I could."));
    await w.say("schedule a lot");
    await eventually(() => plainTexts(w).includes("Scheduled what I could."));
    const responses = lastResponses();
    expect(responses.filter((r) => r.includes('"scheduled"'))).toHaveLength(20);
    expect(
      responses.filter((r) => r.includes("already has 20 scheduled tasks, the most allowed")),
    ).toHaveLength(10);
    expect(responses.slice(30)).toEqual([
      expect.stringContaining(
        '\\"in 999999999999999 days\\" is too far ahead: a task can be scheduled at most 10 years ahead',
      ),
      expect.stringContaining('\\"in 99999999999 minutes\\" is too far ahead'),
      expect.stringContaining('\\"every 99999999999 hours\\" is too far ahead'),
    ]);
    const all = await tasks();
    expect(all).toHaveLength(20);
    expect(all.every((t) => t.status === "active" && t.next_run_at !== null)).toBe(true);
  });

  it("a task whose creator left ALLOWED_USER_IDS is disabled at start-up, not run, and the log says so", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env });
    w.gemini.script(
      call("schedule_task", { when: "in 1 hour", instruction: "Check the oven", mode: "remind" }),
      text("Scheduled."),
    );
    await w.say("remind me");
    await eventually(() => plainTexts(w).includes("Scheduled."));
    w.service.proc.kill("SIGTERM");
    expect(await w.service.exited).toBe(0);
    await db()
      .updateTable("tasks")
      .set({ next_run_at: Date.now() - 60_000 })
      .execute();

    w.service = await w.start({ ALLOWED_USER_IDS: "999" });
    const line = await eventually(() =>
      w.service.logs.find(
        (l) =>
          l.msg === "disabled a scheduled task: whoever set it up is no longer in ALLOWED_USER_IDS",
      ),
    );
    expect(line).toMatchObject({ created_by: ALLOWED_USER, chat_id: String(ALLOWED_USER) });
    expect(await tasks()).toEqual([
      {
        status: "disabled",
        status_reason: "whoever set it up is no longer in ALLOWED_USER_IDS",
        next_run_at: null,
      },
    ]);
    expect(await unfinished()).toBe(0);
    expect(plainTexts(w).some((t) => t.startsWith("⏰"))).toBe(false);
  });

  it("runs at most 20 of a conversation's tasks in an hour; the rest wait, still due", {
    timeout: 60_000,
  }, async () => {
    w = await startWorld({ kind, env });
    const store = createTaskStore({ db: db(), kind });
    for (let i = 0; i < 25; i++) {
      await store.add({
        conversation: String(ALLOWED_USER),
        chatId: ALLOWED_USER,
        threadId: undefined,
        instruction: `Reminder ${i}`,
        mode: "remind",
        repeatText: undefined,
        recurrence: undefined,
        timeZone: "Europe/Berlin",
        nextRunAt: Date.now() - 60_000 + i,
        createdBy: ALLOWED_USER,
      });
    }
    const held = await eventually(() =>
      w.service.logs.find(
        (l) =>
          l.msg ===
          "a conversation's scheduled runs reached their hourly limit; its other due tasks wait",
      ),
    );
    expect(held).toMatchObject({ chat_id: String(ALLOWED_USER), waiting: 5, runs_per_hour: 20 });
    await eventually(
      async () =>
        plainTexts(w).filter((t) => t.startsWith("⏰")).length >= 20 && (await unfinished()) === 0,
    );
    expect(plainTexts(w).filter((t) => t.startsWith("⏰"))).toHaveLength(20);
    const waiting = (await tasks()).filter((t) => t.status === "active");
    expect(waiting).toHaveLength(5);
    expect(waiting.every((t) => (t.next_run_at ?? Infinity) < Date.now())).toBe(true);
  });
});
