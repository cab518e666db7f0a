import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type InboxItem } from "../../src/queue/inbox.js";
import { createTaskStore } from "../../src/tasks/store.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

const TASKS = 24;
const NOW = Date.parse("2026-12-03T08:00:00Z");

describe("two replicas on PostgreSQL racing for the same due tasks", () => {
  let testDb: TestDatabase;
  let replicas: DatabaseHandle[] = [];

  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    // Two handles, two connection pools: what two processes would have.
    replicas = [openDatabase(testDb.target), openDatabase(testDb.target)];
    await migrateToLatest((replicas[0] as DatabaseHandle).db, captureLogger().logger);
  });
  afterAll(async () => {
    for (const r of replicas) await r.close();
    await testDb.dispose();
  });

  it("queue each due run once and claim it once", async () => {
    const stores = replicas.map((r) => createTaskStore({ db: r.db, kind: r.kind }));
    const [first] = stores;
    if (!first) throw new Error("no replica");
    for (let i = 0; i < TASKS; i++) {
      await first.add({
        conversation: String(7000 + (i % 6)),
        chatId: 7000 + (i % 6),
        threadId: undefined,
        instruction: `task ${i}`,
        mode: "remind",
        repeatText: i % 2 ? "daily" : undefined,
        recurrence: i % 2 ? { kind: "cron", expression: "0 9 * * *" } : undefined,
        timeZone: "Europe/Berlin",
        nextRunAt: NOW - i * 1000,
      });
    }
    // Both replicas' schedulers fire at once, several times over.
    const rounds = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (stores[i % 2] ?? first).queueDue(NOW)),
    );
    expect(rounds.flat()).toHaveLength(TASKS);
    const db = (replicas[0] as DatabaseHandle).db;
    const runs = await db.selectFrom("task_runs").select(["task_id", "due_at"]).execute();
    expect(runs).toHaveLength(TASKS);
    const tasks = await db.selectFrom("tasks").select(["status", "runs", "next_run_at"]).execute();
    expect(tasks.every((t) => t.runs === 1)).toBe(true);
    // Recurring ones moved on to tomorrow's 9:00 once; one-shots are done.
    expect(new Set(tasks.map((t) => `${t.status} ${t.next_run_at}`))).toEqual(
      new Set(["done null", `active ${NOW + 24 * 3_600_000}`]),
    );

    // Both replicas' dispatchers claim what is queued, as fast as they can.
    const inboxes = replicas.map((r, i) =>
      createInbox({
        db: r.db,
        kind: r.kind,
        workerId: `replica-${i}`,
        leaseMs: 30_000,
        scrub: createScrubber([]),
      }),
    );
    const claimed: InboxItem[] = [];
    await Promise.all(
      inboxes.map(async (inbox) => {
        for (;;) {
          const item = await inbox.claim();
          if (!item) {
            // A conversation's next run waits for the one running: finish and look again.
            if (claimed.length >= TASKS) return;
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          claimed.push(item);
          expect(await inbox.finish(item)).toBe(true);
        }
      }),
    );
    const ids = claimed.map((item) => item.updateId);
    expect(new Set(ids).size).toBe(TASKS);
    expect(ids).toHaveLength(TASKS);
  });
});
