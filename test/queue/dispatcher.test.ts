import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import { Dispatcher, type DispatcherDeps } from "../../src/queue/dispatcher.js";
import { createInbox, type InboxItem, type Lease } from "../../src/queue/inbox.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";
import { eventually } from "../helpers/service-process.js";

describe("dispatcher", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let clock = 1_000_000;
  const inboxFor = (workerId: string) =>
    createInbox({
      db: handle.db,
      kind: "sqlite",
      workerId,
      leaseMs: 30_000,
      now: () => clock,
      scrub: createScrubber([]),
    });

  beforeAll(async () => {
    testDb = await createTestDatabase("sqlite");
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, captureLogger().logger);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  /** One update at a time, and no polling or renewing of its own: the test drives it. */
  const oneAtATime = (
    deps: Pick<
      DispatcherDeps,
      "inbox" | "handle" | "logger" | "maxAttempts" | "onGiveUp" | "random"
    >,
  ) => new Dispatcher({ concurrency: 1, pollMs: 60_000, renewMs: 60_000, ...deps });

  /** A dispatcher whose one update waits in `handle` until the test lets it go on. */
  function stalledRun(workerId: string) {
    const { logger, lines } = captureLogger();
    const inbox = inboxFor(workerId);
    const answered: number[] = [];
    const gaveUp: number[] = [];
    let started: (run: { item: InboxItem; lease: Lease }) => void = () => {};
    const running = new Promise<{ item: InboxItem; lease: Lease }>((resolve) => {
      started = resolve;
    });
    let goOn: () => void = () => {};
    const stall = new Promise<void>((resolve) => {
      goOn = resolve;
    });
    const dispatcher = oneAtATime({
      inbox,
      handle: async (item, lease) => {
        started({ item, lease });
        await stall;
        await lease.ensureHeld();
        answered.push(item.updateId);
      },
      logger,
      // A failure would be final: the give-up message is what a lost lease must not send.
      maxAttempts: 1,
      onGiveUp: async (item) => {
        gaveUp.push(item.updateId);
      },
    });
    return { inbox, dispatcher, running, goOn, answered, gaveUp, lines };
  }

  const rowOf = (id: number) =>
    handle.db
      .selectFrom("inbox")
      .select(["status", "claimed_by", "attempts"])
      .where("update_id", "=", id)
      .executeTakeFirstOrThrow();

  it("takes a burst in a few claims, as many as it may run, and the rest as turns finish", async () => {
    const inbox = inboxFor("burst");
    const limits: number[] = [];
    const ids = Array.from({ length: 150 }, (_, i) => 1_001 + i);
    let goOn: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      goOn = resolve;
    });
    const started: number[] = [];
    const dispatcher = new Dispatcher({
      inbox: {
        ...inbox,
        claimMany: (limit) => {
          limits.push(limit);
          return inbox.claimMany(limit);
        },
      },
      handle: async (item) => {
        started.push(item.updateId);
        await gate;
      },
      logger: captureLogger().logger,
      concurrency: 100,
      pollMs: 60 * 60 * 1000,
      renewMs: 60_000,
      maxAttempts: 1,
    });
    for (const id of ids) await inbox.add(id, `burst-${id}`, {});
    dispatcher.start();
    for (const id of ids) dispatcher.announce(`burst-${id}`);
    await eventually(() => started.length === 100);
    // 64, then the 36 slots left; none while all 100 run.
    expect(limits).toEqual([64, 36]);
    goOn();
    await eventually(() => started.length === ids.length);
    expect(await dispatcher.stop(5_000)).toBe(true);
    expect([...started].sort()).toEqual(ids);
    expect(limits.length).toBeLessThanOrEqual(6);
  });

  it("renews the leases of every running update together, and stops renewing when none runs", async () => {
    const inbox = inboxFor("renews");
    const batches: number[][] = [];
    const ids = [2_001, 2_002, 2_003, 2_004, 2_005];
    let goOn: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      goOn = resolve;
    });
    const dispatcher = new Dispatcher({
      inbox: {
        ...inbox,
        renewLeases: async (leases) => {
          batches.push([...leases].map((lease) => lease.remainingMs()));
          await inbox.renewLeases(leases);
        },
      },
      handle: async () => {
        await gate;
      },
      logger: captureLogger().logger,
      concurrency: ids.length,
      pollMs: 60 * 60 * 1000,
      renewMs: 20,
      maxAttempts: 1,
    });
    for (const id of ids) await inbox.add(id, `renew-${id}`, {});
    dispatcher.start();
    await eventually(() => batches.some((batch) => batch.length === ids.length));
    goOn();
    expect(await dispatcher.stop(5_000)).toBe(true);
    const renewals = batches.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(batches.length).toBe(renewals);
    for (const id of ids) expect((await rowOf(id)).status).toBe("done");
  });

  it("runs at once every update a poll finds, not one per poll interval", async () => {
    const inbox = inboxFor("drains");
    const ids = [501, 502, 503, 504, 505];
    // Stored by another process: nobody announces them here.
    for (const id of ids) await inbox.add(id, `drain-${id}`, {});
    const started: number[] = [];
    let goOn: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      goOn = resolve;
    });
    const dispatcher = new Dispatcher({
      inbox,
      handle: async (item) => {
        started.push(item.updateId);
        await gate;
      },
      logger: captureLogger().logger,
      concurrency: ids.length,
      // The first poll comes at start; the next would be an hour later.
      pollMs: 60 * 60 * 1000,
      renewMs: 60_000,
      maxAttempts: 1,
    });
    dispatcher.start();
    await eventually(() => started.length === ids.length);
    expect(started.sort()).toEqual(ids);
    goOn();
    expect(await dispatcher.stop(5_000)).toBe(true);
  });

  it("runs a chat's waiting update when its run ends, after another chat's run ended first", async () => {
    const inbox = inboxFor("held-back");
    const started: number[] = [];
    const finishRun = new Map<number, () => void>();
    let claiming = 0;
    const dispatcher = new Dispatcher({
      inbox: {
        ...inbox,
        claimMany: async (limit) => {
          claiming++;
          try {
            return await inbox.claimMany(limit);
          } finally {
            claiming--;
          }
        },
      },
      handle: async (item) => {
        started.push(item.updateId);
        await new Promise<void>((resolve) => finishRun.set(item.updateId, resolve));
      },
      logger: captureLogger().logger,
      concurrency: 3,
      // Only announcements and finished runs may wake it: the first poll is an hour away.
      pollMs: 60 * 60 * 1000,
      renewMs: 60_000,
      maxAttempts: 1,
    });
    dispatcher.start();
    // Chat A sends two, chat B one: A's second waits behind its first.
    const stored: [number, string][] = [
      [601, "chat-a"],
      [602, "chat-a"],
      [603, "chat-b"],
    ];
    for (const [id, chat] of stored) {
      await inbox.add(id, chat, {});
      dispatcher.announce(chat);
    }
    await eventually(() => started.length === 2);
    expect(started).toEqual([601, 603]);
    // B's run ends first; a claim then would find nothing (A still runs).
    finishRun.get(603)?.();
    await eventually(async () => claiming === 0 && (await rowOf(603)).status === "done");
    expect(started).toHaveLength(2);
    finishRun.get(601)?.();
    await eventually(() => started.length === 3, 5_000);
    expect(started).toEqual([601, 603, 602]);
    finishRun.get(602)?.();
    expect(await dispatcher.stop(5_000)).toBe(true);
  });

  it("finishes an update whose lease held", async () => {
    const run = stalledRun("steady");
    await run.inbox.add(1, "held", {});
    run.dispatcher.start();
    await run.running;
    clock += 25_000;
    run.goOn();
    expect(await run.dispatcher.stop(5_000)).toBe(true);
    expect(run.answered).toEqual([1]);
    expect(await rowOf(1)).toEqual({ status: "done", claimed_by: "steady", attempts: 1 });
  });

  it("stops a run that stalled past its lease: no answer, no give-up, the new holder keeps the update", async () => {
    const run = stalledRun("stalled");
    await run.inbox.add(2, "lost", {});
    run.dispatcher.start();
    await run.running;
    clock += 30_001;
    const taken = await inboxFor("healthy").claim();
    expect(taken).toMatchObject({ updateId: 2, attempts: 2 });
    run.goOn();
    expect(await run.dispatcher.stop(5_000)).toBe(true);
    expect(run.answered).toEqual([]);
    expect(run.gaveUp).toEqual([]);
    expect(await rowOf(2)).toEqual({ status: "running", claimed_by: "healthy", attempts: 2 });
    expect(run.lines.map((l) => l.msg)).toContain(
      "lost the lease of this update to another worker; stopped its run",
    );
  });

  it("gives up on an update claimed more often than a run may fail, without running it", async () => {
    const inbox = inboxFor("after-crashes");
    await inbox.add(9, "crashing", {});
    // Four claims whose runs ended with the process: pending again after each restart.
    await handle.db.updateTable("inbox").set({ attempts: 4 }).where("update_id", "=", 9).execute();
    const ran: number[] = [];
    const gaveUp: number[] = [];
    const { logger, lines } = captureLogger();
    const dispatcher = oneAtATime({
      inbox,
      handle: async (item) => void ran.push(item.updateId),
      logger,
      maxAttempts: 3,
      onGiveUp: async (item) => void gaveUp.push(item.updateId),
    });
    dispatcher.start();
    await eventually(() => gaveUp.includes(9));
    expect(await dispatcher.stop(5_000)).toBe(true);
    expect(ran).not.toContain(9);
    expect((await rowOf(9)).status).toBe("failed");
    expect(lines.find((l) => l.msg === "giving up on an update")).toMatchObject({ attempts: 5 });
  });

  it("records an answered update as done once the database answers again, without running it twice", async () => {
    const { logger, lines } = captureLogger();
    const inbox = inboxFor("patient");
    let refusals = 2;
    const handled: number[] = [];
    const dispatcher = oneAtATime({
      inbox: {
        ...inbox,
        finish: async (claim, outcome) => {
          if (refusals-- > 0) throw new Error("connection terminated unexpectedly");
          return inbox.finish(claim, outcome);
        },
      },
      handle: async (item) => {
        handled.push(item.updateId);
      },
      logger,
      maxAttempts: 5,
      random: () => 0.5,
    });
    await inbox.add(3, "answered", {});
    dispatcher.start();
    await vi.waitFor(async () => expect((await rowOf(3)).status).toBe("done"));
    expect(await dispatcher.stop(5_000)).toBe(true);
    expect(handled).toEqual([3]);
    expect(await rowOf(3)).toEqual({ status: "done", claimed_by: "patient", attempts: 1 });
    expect(lines.map((l) => [l.msg, l.retry_in_ms])).toEqual([
      ["could not record how the update ended; trying again", 50],
      ["could not record how the update ended; trying again", 100],
    ]);
  });

  it("leaves an answered update it could not record to run again, without a give-up message", async () => {
    const { logger, lines } = captureLogger();
    const inbox = inboxFor("unlucky");
    const gaveUp: number[] = [];
    const dispatcher = oneAtATime({
      inbox: {
        ...inbox,
        // The database stays away until the lease has all but run out.
        finish: async () => {
          clock += 29_950;
          throw new Error("connection terminated unexpectedly");
        },
      },
      handle: async () => {},
      logger,
      // The first failure would be final, were the run's own failure the one that counted.
      maxAttempts: 1,
      // The first retry's wait (up to 100 ms) then always outlasts the 50 ms of lease left.
      random: () => 0.99,
      onGiveUp: async (item) => {
        gaveUp.push(item.updateId);
      },
    });
    await inbox.add(4, "unrecorded", {});
    dispatcher.start();
    await vi.waitFor(() =>
      expect(lines.map((l) => l.msg)).toContain(
        "could not record the answered update: once its lease ends it runs again, and its stored answer is sent again",
      ),
    );
    expect(await dispatcher.stop(5_000)).toBe(true);
    expect(gaveUp).toEqual([]);
    expect(await rowOf(4)).toEqual({ status: "running", claimed_by: "unlucky", attempts: 1 });
  });
});
