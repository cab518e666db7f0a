import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { call, type RecordedRequest, text } from "../fakes/gemini.js";
import { eventually, type ServiceWorld, startWorld } from "../helpers/service-process.js";

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
