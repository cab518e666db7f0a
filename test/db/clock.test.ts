import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { readPostgresTime, startDatabaseClock } from "../../src/db/clock.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import { createInbox } from "../../src/queue/inbox.js";
import { createEmbeddingQueue } from "../../src/recall/embedding-queue.js";
import { createEmbeddingWorker } from "../../src/recall/embedding-worker.js";
import { createSessionStore } from "../../src/session/store.js";
import { fakeEmbedding } from "../fakes/gemini-embeddings.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { said } from "../helpers/events.js";
import { captureLogger } from "../helpers/logs.js";

const RESYNC_MS = 60_000;
const OFF_CLOCK =
  "this host's clock differs from the database server's by more than a second; leases use the server's time, but check the host's NTP";

/**
 * A host clock that only moves when a round trip takes time, and a server that is `offset` ms
 * ahead of it and stamps its time `stampAt` ms into each trip of `roundTrip` ms.
 */
function simulated(trips: { roundTrip: number; stampAt: number }[], offset: () => number) {
  let local = 1_000_000;
  let trip = 0;
  const readServerTime = vi.fn(async () => {
    const { roundTrip, stampAt } = trips[trip++ % trips.length] as (typeof trips)[number];
    const stamped = local + stampAt + offset();
    local += roundTrip;
    return stamped;
  });
  return { localNow: () => local, readServerTime };
}

/**
 * Fires the schedule's due measurements and lets them finish: the simulated server answers at
 * once, so a measurement is a chain of promise callbacks, all run before the next macrotask.
 */
async function tick(ms: number): Promise<void> {
  vi.advanceTimersByTime(ms);
  await new Promise((resolve) => setImmediate(resolve));
}

describe("the database clock", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("takes the server's time against the middle of the fastest of three round trips", async () => {
    // The slow trips were stamped early, so they would put the server 4 ms behind where it is.
    const host = simulated(
      [
        { roundTrip: 10, stampAt: 1 },
        { roundTrip: 2, stampAt: 1 },
        { roundTrip: 8, stampAt: 0 },
      ],
      () => 5_000,
    );
    const clock = await startDatabaseClock({
      ...host,
      logger: captureLogger().logger,
      resyncMs: RESYNC_MS,
    });
    clock.stop();
    expect(host.readServerTime).toHaveBeenCalledTimes(3);
    expect(clock.offsetMs).toBe(5_000);
    expect(clock.now()).toBe(host.localNow() + 5_000);
  });

  it("measures again on schedule, and warns once while the host is more than a second off", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let offset = 2_000;
    const host = simulated([{ roundTrip: 2, stampAt: 1 }], () => offset);
    const { logger, lines } = captureLogger();
    const clock = await startDatabaseClock({ ...host, logger, resyncMs: RESYNC_MS });
    expect(clock.offsetMs).toBe(2_000);
    const warnings = () => lines.filter((l) => l.msg === OFF_CLOCK);
    expect(warnings()).toHaveLength(1);

    offset = 2_500;
    await tick(RESYNC_MS);
    expect(clock.offsetMs).toBe(2_500);
    expect(warnings()).toHaveLength(1);

    offset = -30;
    await tick(RESYNC_MS);
    expect(clock.offsetMs).toBe(-30);
    offset = -1_500;
    await tick(RESYNC_MS);
    expect(warnings().map((l) => l.offset_ms)).toEqual([2_000, -1_500]);

    clock.stop();
    const reads = host.readServerTime.mock.calls.length;
    await tick(3 * RESYNC_MS);
    expect(host.readServerTime).toHaveBeenCalledTimes(reads);
  });

  it("keeps the last offset, with a warning, when the server cannot be read", async () => {
    const host = simulated([{ roundTrip: 2, stampAt: 1 }], () => 300);
    const { logger, lines } = captureLogger();
    const clock = await startDatabaseClock({ ...host, logger, resyncMs: RESYNC_MS });
    clock.stop();
    host.readServerTime.mockRejectedValueOnce(new Error("connection terminated"));
    await clock.sync();
    expect(clock.offsetMs).toBe(300);
    expect(lines.at(-1)).toMatchObject({
      level: 40,
      err: "connection terminated",
      msg: "could not read the database server's clock; leases keep the last measured offset",
    });
  });
});

describe("leases between replicas whose clocks disagree, on PostgreSQL", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  const { logger } = captureLogger();
  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  /** The database clock of a replica whose own clock is `localNow`, measured once. */
  const serverClockOn = async (localNow: () => number) => {
    const clock = await startDatabaseClock({
      readServerTime: () => readPostgresTime(handle.db),
      localNow,
      logger,
      resyncMs: RESYNC_MS,
    });
    clock.stop();
    return clock;
  };

  it("reads the server's clock, here the same host's", async () => {
    const before = Date.now();
    const server = await readPostgresTime(handle.db);
    expect(server).toBeGreaterThanOrEqual(before - 50);
    expect(server).toBeLessThanOrEqual(Date.now() + 50);
  });

  it("hold a lease taken on a host ten minutes slow, once both time it by the server", async () => {
    const SLOW_MS = 10 * 60 * 1000;
    const slowHost = () => Date.now() - SLOW_MS;
    const inboxOn = (workerId: string, now: () => number) =>
      createInbox({
        db: handle.db,
        kind: "postgres",
        workerId,
        leaseMs: 30_000,
        now,
        scrub: createScrubber([]),
      });

    // By its own clock, the slow replica writes a lease that ended ten minutes ago.
    await inboxOn("slow", slowHost).add(1, "chat-1", { update_id: 1 });
    expect(await inboxOn("slow", slowHost).claim()).toMatchObject({ updateId: 1 });
    expect(await inboxOn("on-time", Date.now).claim()).toMatchObject({ updateId: 1, attempts: 2 });

    const clock = await serverClockOn(slowHost);
    expect(Math.abs(clock.offsetMs - SLOW_MS)).toBeLessThan(1_000);
    await inboxOn("slow", clock.now).add(2, "chat-2", { update_id: 2 });
    expect(await inboxOn("slow", clock.now).claim()).toMatchObject({ updateId: 2 });
    expect(await inboxOn("on-time", Date.now).claim()).toBeUndefined();
  });

  it("hold an embedding claim against a replica ten minutes fast, once it times by the server", async () => {
    const FAST_MS = 10 * 60 * 1000;
    const fastHost = () => Date.now() + FAST_MS;
    await createSessionStore({ db: handle.db, logger }).append("9301", [
      { event: said("the spare key is under the blue flowerpot") },
    ]);
    const queueOf = (worker: string) =>
      createEmbeddingQueue({ db: handle.db, worker, leaseMs: 5 * 60 * 1000 });
    const onTime = queueOf("on-time");
    await onTime.intake();
    expect(await onTime.claim(10, Date.now())).toHaveLength(1);

    const embedded: string[] = [];
    const fast = createEmbeddingWorker({
      db: handle.db,
      queue: queueOf("fast"),
      embed: async (texts) => {
        embedded.push(...texts);
        return texts.map((t) => fakeEmbedding(t, 256));
      },
      model: "fake-embedding",
      logger,
    });
    const clock = await serverClockOn(fastHost);
    expect(await fast.runOnce(clock.now)).toBe(0);
    expect(embedded).toEqual([]);
    // By its own clock the lease ran out long ago: it would embed the event a second time.
    expect(await fast.runOnce(fastHost)).toBe(1);
    expect(embedded).toEqual(["the spare key is under the blue flowerpot"]);
  });
});
