import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { listenPostgres, type PostgresListener } from "../../src/db/postgres-listener.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox, type InboxItem } from "../../src/queue/inbox.js";
import { listenForStops, replicaStopper } from "../../src/queue/replica-stops.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";
import { eventually } from "../helpers/service-process.js";

/** Stops across replicas need PostgreSQL's LISTEN/NOTIFY: SQLite has one process per file. */
describe("stops across PostgreSQL replicas", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let connectionString: string;
  const listeners: PostgresListener[] = [];
  const { logger } = captureLogger();
  let nextId = 1;
  const inboxFor = (workerId: string) =>
    createInbox({
      db: handle.db,
      kind: "postgres",
      workerId,
      leaseMs: 30_000,
      scrub: createScrubber([]),
    });

  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    if (testDb.target.kind !== "postgres") throw new Error("expected PostgreSQL");
    connectionString = testDb.target.connectionString;
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
  });
  afterAll(async () => {
    for (const listener of listeners) await listener.close();
    await handle?.close();
    await testDb?.dispose();
  });

  /** A replica: its inbox runs one update of `conversation`; its listener hears its stops. */
  async function replica(workerId: string, conversation: string) {
    const inbox = inboxFor(workerId);
    const updateId = nextId++;
    await inbox.add(updateId, conversation, {});
    const item = (await inbox.claim()) as InboxItem;
    expect(item.updateId).toBe(updateId);
    const stopped: number[] = [];
    const listener = listenForStops({
      connectionString,
      workerId,
      stopUpdate: (id) => stopped.push(id),
      logger,
    });
    listeners.push(listener);
    await listener.ready;
    return { updateId, stopped };
  }

  it("reaches the replica running the answer at once, and no other", async () => {
    const runner = await replica("runner", "chat-r");
    const bystander = await replica("bystander", "chat-b");
    const stop = replicaStopper({
      db: handle.db,
      inbox: inboxFor("front"),
      askerOf: async () => undefined,
      logger,
    });
    expect(await stop({ conversation: "chat-r" })).toBe(true);
    expect(await stop({ conversation: "chat-b" })).toBe(true);
    // Notifications come in the order they were sent: once the second is in, so is the first.
    await eventually(() => bystander.stopped.length > 0, 10_000);
    await eventually(() => runner.stopped.length > 0, 10_000);
    expect(runner.stopped).toEqual([runner.updateId]);
    expect(bystander.stopped).toEqual([bystander.updateId]);
    expect(await stop({ conversation: "chat-nothing" })).toBe(false);
  });

  it("a listener whose connection is cut listens again", async () => {
    const channel = `test_${Math.random().toString(36).slice(2, 10)}`;
    const heard: string[] = [];
    const listener = listenPostgres({
      connectionString,
      channel,
      onNotification: (payload) => heard.push(payload),
      logger,
    });
    listeners.push(listener);
    await listener.ready;
    const notify = (payload: string) =>
      sql`select pg_notify(${channel}, ${payload})`.execute(handle.db);
    await notify("before");
    await eventually(() => heard.includes("before"), 10_000);
    const cut = await sql<{ cut: boolean }>`
      select pg_terminate_backend(pid) as cut from pg_stat_activity
      where query = ${`LISTEN "${channel}"`}`.execute(handle.db);
    expect(cut.rows).toEqual([{ cut: true }]);
    // Missed while it reconnects (a second or two): sent again until one arrives.
    await eventually(async () => {
      await notify("after");
      return heard.includes("after");
    }, 20_000);
  });
});
