import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createScrubber } from "../../src/logger.js";
import {
  ALBUM_SETTLE_MS,
  createInbox,
  type Inbox,
  type InboxItem,
  type Lease,
  LeaseLostError,
} from "../../src/queue/inbox.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { fillDiskForInbox } from "../helpers/disk-full.js";
import { captureLogger } from "../helpers/logs.js";

describe.each(DATABASE_KINDS)("inbox on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let clock = 1_000_000;
  let nextId = 1;
  const { logger } = captureLogger();
  const inboxFor = (
    workerId: string,
    on: DatabaseHandle = handle,
    onStopRequested?: (updateId: number) => void,
  ) =>
    createInbox({
      db: on.db,
      kind: on.kind,
      workerId,
      leaseMs: 30_000,
      now: () => clock,
      onStopRequested,
      scrub: createScrubber([]),
    });

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  /** Drains whatever can run now, finishing nothing: what a fresh worker would start. */
  async function claimAll(inbox: Inbox): Promise<InboxItem[]> {
    const items: InboxItem[] = [];
    for (let item = await inbox.claim(); item; item = await inbox.claim()) items.push(item);
    return items;
  }
  const idsOf = (items: readonly InboxItem[]) => items.map((item) => item.updateId);
  async function claimOne(inbox: Inbox): Promise<InboxItem> {
    const item = await inbox.claim();
    if (!item) throw new Error("expected an update to claim");
    return item;
  }

  it("stores an update once and hands back what was stored", async () => {
    const inbox = inboxFor("a");
    const id = nextId++;
    expect(await inbox.add(id, "chat-1", { update_id: id, text: "hi" })).toBe(true);
    expect(await inbox.add(id, "chat-1", { update_id: id, text: "again" })).toBe(false);
    const item = await claimOne(inbox);
    expect(item).toEqual({
      updateId: id,
      chatId: "chat-1",
      update: { update_id: id, text: "hi" },
      attempts: 1,
      leaseUntil: clock + 30_000,
      delivered: 0,
      liveMessages: [],
      toolFiles: [],
    });
    expect(await inbox.finish(item)).toBe(true);
    expect(await inbox.claim()).toBeUndefined();
  });

  it("runs one update per chat at a time, oldest first, chats side by side", async () => {
    const inbox = inboxFor("a");
    const [a1, b1, a2, b2, c1] = [nextId++, nextId++, nextId++, nextId++, nextId++];
    await inbox.add(a1, "A", {});
    await inbox.add(b1, "B", {});
    await inbox.add(a2, "A", {});
    await inbox.add(b2, "B", {});
    await inbox.add(c1, null, {});
    const first = await claimAll(inbox);
    expect(idsOf(first)).toEqual([a1, b1, c1]);
    const [ia1, ib1, ic1] = first;
    // Another replica sees nothing it may run while those are leased.
    expect(await claimAll(inboxFor("b"))).toEqual([]);
    await inbox.finish(ia1 as InboxItem);
    const [ia2] = await claimAll(inbox);
    expect(ia2?.updateId).toBe(a2);
    await inbox.finish(ib1 as InboxItem);
    await inbox.finish(ia2 as InboxItem);
    const other = inboxFor("b");
    const [ib2] = await claimAll(other);
    expect(ib2?.updateId).toBe(b2);
    await other.finish(ib2 as InboxItem);
    await inbox.finish(ic1 as InboxItem);
  });

  it("holds an older update that arrives late until its chat's running one is done", async () => {
    const inbox = inboxFor("late");
    const older = nextId++;
    const newer = nextId++;
    await inbox.add(newer, "L", {});
    const running = await claimOne(inbox);
    expect(running.updateId).toBe(newer);
    await inbox.add(older, "L", {});
    expect(await claimAll(inboxFor("other"))).toEqual([]);
    await inbox.finish(running);
    const late = await claimOne(inbox);
    expect(late.updateId).toBe(older);
    await inbox.finish(late);
  });

  it("lets another replica take over once a lease expires, and keeps a renewed one", async () => {
    const first = inboxFor("dead");
    const second = inboxFor("alive");
    const id = nextId++;
    await first.add(id, "L", {});
    const stale = await claimOne(first);
    expect(stale.updateId).toBe(id);
    clock += 20_000;
    expect(await first.renew(stale)).toBe(clock + 30_000);
    clock += 20_000;
    expect(await second.claim()).toBeUndefined();
    clock += 20_000;
    const taken = await claimOne(second);
    expect(taken).toMatchObject({ updateId: id, attempts: 2 });
    // The first replica lost it: its renewals no longer count.
    expect(await first.renew(stale)).toBeUndefined();
    await second.finish(taken);
  });

  it("renews many leases in one go: held ones extended, lost ones told, stops passed on", async () => {
    const stopped: number[] = [];
    const runner = inboxFor("many", handle, (updateId) => stopped.push(updateId));
    const [a, b, c] = [nextId++, nextId++, nextId++];
    await runner.add(a, "R1", {});
    await runner.add(b, "R2", {});
    await runner.add(c, "R3", {});
    const claimed = await runner.claimMany(10);
    const [la, lb, lc] = claimed.map((item) => runner.leaseOf(item)) as [Lease, Lease, Lease];
    // All three leases run out; A's is renewed on its own, B's update goes to another worker,
    // and C's to this worker again: a new claim beside the old one.
    clock += 30_001;
    await la.renew();
    const thief = inboxFor("thief");
    const stolen = await thief.claimMany(1);
    expect(idsOf(stolen)).toEqual([b]);
    const [again] = await runner.claimMany(10);
    expect(again).toMatchObject({ updateId: c, attempts: 2 });
    const lc2 = runner.leaseOf(again as InboxItem);
    expect(await inboxFor("other").requestStop({ conversation: "R1" })).toEqual([
      { updateId: a, worker: "many" },
    ]);
    clock += 5_000;
    await runner.renewLeases([la, lb, lc, lc2]);
    expect([la.lost, lb.lost, lc.lost, lc2.lost]).toEqual([false, true, true, false]);
    expect(la.remainingMs()).toBe(30_000);
    expect(lc2.remainingMs()).toBe(30_000);
    expect(stopped).toEqual([a]);
    // Lost leases are not asked about again.
    await runner.renewLeases([lb, lc]);
    expect(await runner.finish(claimed[0] as InboxItem)).toBe(true);
    expect(await thief.finish(stolen[0] as InboxItem)).toBe(true);
    expect(await runner.finish(again as InboxItem)).toBe(true);
  });

  it("ignores what a worker that lost its lease writes, even when the same worker claims again", async () => {
    const inbox = inboxFor("stalls");
    const id = nextId++;
    await inbox.add(id, "F", {});
    const stale = await claimOne(inbox);
    clock += 30_001;
    const again = await claimOne(inbox);
    expect(again).toMatchObject({ updateId: id, attempts: 2 });
    expect(await inbox.finish(stale)).toBe(false);
    expect(await inbox.release(stale, "late failure", 0)).toBe(false);
    expect(await inbox.renew(stale)).toBeUndefined();
    expect(await inbox.recordDelivered(stale, 2)).toBe(false);
    await expect(inbox.leaseOf(stale).recordDelivered(2)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(inbox.leaseOf(stale).recordLiveMessages([5])).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    const row = await handle.db
      .selectFrom("inbox")
      .select(["status", "attempts", "lease_until", "delivered"])
      .where("update_id", "=", id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      status: "running",
      attempts: 2,
      lease_until: again.leaseUntil,
      delivered: 0,
    });
    expect(await inbox.finish(again)).toBe(true);
  });

  it("hands the next claim how many messages of the answer an earlier run delivered", async () => {
    const inbox = inboxFor("partial");
    const id = nextId++;
    await inbox.add(id, "P", {});
    const first = await claimOne(inbox);
    expect(inbox.leaseOf(first).delivered).toBe(0);
    await inbox.leaseOf(first).recordDelivered(2);
    expect(await inbox.release(first, "Telegram failed on the third message", 0)).toBe(true);
    clock += 1;
    const second = await claimOne(inbox);
    expect(second).toMatchObject({ updateId: id, attempts: 2, delivered: 2 });
    expect(inbox.leaseOf(second).delivered).toBe(2);
    expect(await inbox.finish(second)).toBe(true);
  });

  it("hands the next claim the messages an earlier run showed the answer in", async () => {
    const inbox = inboxFor("live");
    const id = nextId++;
    await inbox.add(id, "L", {});
    const first = await claimOne(inbox);
    const lease = inbox.leaseOf(first);
    expect(lease.liveMessages).toEqual([]);
    await lease.recordLiveMessages([41]);
    await lease.recordLiveMessages([41, 42]);
    // The process dies: its lease runs out and another worker takes the update.
    clock += 30_001;
    const second = await claimOne(inboxFor("after"));
    expect(second).toMatchObject({ updateId: id, attempts: 2, liveMessages: [41, 42] });
    const after = inboxFor("after").leaseOf(second);
    await after.recordLiveMessages([]);
    expect(await inboxFor("after").release(second, "again", 0)).toBe(true);
    clock += 1;
    const third = await claimOne(inbox);
    expect(third.liveMessages).toEqual([]);
    expect(await inbox.finish(third)).toBe(true);
  });

  it("records a stop for what another worker runs, which that worker's next renewal passes on", async () => {
    const stopped: number[] = [];
    const runner = inboxFor("runner", handle, (updateId) => stopped.push(updateId));
    const other = inboxFor("other");
    const [chat, topic, draft] = [nextId++, nextId++, nextId++];
    await runner.add(chat, "900", {});
    await runner.add(topic, "901:7", {});
    await runner.add(draft, "902", {});
    const items = await claimAll(runner);
    expect(idsOf(items)).toEqual([chat, topic, draft]);

    // Its own answers are the runner's registry's business, not the database's.
    expect(await runner.requestStop({ conversation: "900" })).toEqual([]);
    expect(await other.requestStop({ conversation: "900" })).toEqual([
      { updateId: chat, worker: "runner" },
    ]);
    // A draft's button: its id is the update's (negated for a scheduled run's negative id).
    expect(await other.requestStop({ chatId: 901, draftId: topic })).toEqual([
      { updateId: topic, worker: "runner" },
    ]);
    expect(await other.requestStop({ chatId: 902, draftId: -draft })).toEqual([
      { updateId: draft, worker: "runner" },
    ]);
    // Nothing for another chat's draft of the same id, nor a conversation with nothing running.
    expect(await other.requestStop({ chatId: 903, draftId: chat })).toEqual([]);
    expect(await other.requestStop({ conversation: "904" })).toEqual([]);

    const [first, second, third] = items as [InboxItem, InboxItem, InboxItem];
    await runner.renew(first);
    await runner.renew(second);
    expect(stopped).toEqual([chat, topic]);
    await runner.finish(first);
    await runner.finish(second);
    // Finished, or its lease run out (its worker died): nothing runs it any more.
    expect(await other.requestStop({ conversation: "900" })).toEqual([]);
    clock += 30_001;
    expect(await other.requestStop({ conversation: "902" })).toEqual([]);
    expect(await runner.finish(third)).toBe(true);
  });

  it("vouches for a lease from its own clock while half of it is left, and asks the database after", async () => {
    const first = inboxFor("first");
    const second = inboxFor("second");
    const id = nextId++;
    await first.add(id, "V", {});
    const item = await claimOne(first);
    const lease = first.leaseOf(item);
    clock += 14_000;
    await lease.ensureHeld();
    // Renewed by that check? No: 16 s of 30 were left, so it did not ask. The lease ends as claimed.
    clock += 16_001;
    const taken = await claimOne(second);
    await expect(lease.ensureHeld()).rejects.toBeInstanceOf(LeaseLostError);
    expect(lease.lost).toBe(true);
    await second.finish(taken);
  });

  it("renews a lease that is running short when asked to vouch for it", async () => {
    const inbox = inboxFor("short");
    const id = nextId++;
    await inbox.add(id, "S", {});
    const item = await claimOne(inbox);
    const lease = inbox.leaseOf(item);
    clock += 21_000;
    await lease.ensureHeld();
    clock += 20_000;
    // The check above renewed the lease, so it has not expired yet.
    expect(await inboxFor("other").claim()).toBeUndefined();
    await lease.ensureHeld();
    expect(lease.lost).toBe(false);
    expect(await inbox.finish(item)).toBe(true);
  });

  it("runs a released update again only after its delay, and holds its chat back meanwhile", async () => {
    const inbox = inboxFor("a");
    const [r1, r2] = [nextId++, nextId++];
    await inbox.add(r1, "R", {});
    await inbox.add(r2, "R", {});
    expect(await inbox.release(await claimOne(inbox), "database away", 5_000)).toBe(true);
    expect(await inbox.claim()).toBeUndefined();
    clock += 5_001;
    const retried = await claimOne(inbox);
    expect(retried.updateId).toBe(r1);
    await inbox.finish(retried, { error: "gave up" });
    const next = await claimOne(inbox);
    expect(next.updateId).toBe(r2);
    await inbox.finish(next);
  });

  it("runs an album once it has been quiet, its first item taking in the rest for good", async () => {
    const inbox = inboxFor("album");
    const [a1, a2, text, a3, late] = [nextId++, nextId++, nextId++, nextId++, nextId++];
    const other = nextId++;
    await inbox.add(a1, "AL", { n: 1 }, "G");
    await inbox.add(a2, "AL", { n: 2 }, "G");
    await inbox.add(text, "AL", { n: "text" });
    clock += 600;
    await inbox.add(a3, "AL", { n: 3 }, "G");
    await inbox.add(other, "OT", { n: "other chat" });
    // The album is not quiet yet: it waits, holding back its chat, while other chats run.
    const others = await claimAll(inbox);
    expect(idsOf(others)).toEqual([other]);
    await inbox.finish(others[0] as InboxItem);
    clock += ALBUM_SETTLE_MS - 1;
    expect(await inbox.claim()).toBeUndefined();
    clock += 1;
    const first = await claimOne(inbox);
    expect(first.updateId).toBe(a1);
    const album = await inbox.leaseOf(first).takeAlbum("G");
    expect(album).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const merged = await handle.db
      .selectFrom("inbox")
      .select(["update_id", "status", "merged_into"])
      .where("update_id", "in", [a1, a2, a3])
      .orderBy("update_id")
      .execute();
    expect(merged).toEqual([
      { update_id: a1, status: "running", merged_into: a1 },
      { update_id: a2, status: "done", merged_into: a1 },
      { update_id: a3, status: "done", merged_into: a1 },
    ]);
    // An item arriving now is not taken in, not even by a run after a crash: that run answers the
    // album its first run stored.
    await inbox.add(late, "AL", { n: 4 }, "G");
    clock += 30_001;
    const rerun = await claimOne(inboxFor("after-crash"));
    expect(rerun).toMatchObject({ updateId: a1, attempts: 2 });
    expect(await inboxFor("after-crash").leaseOf(rerun).takeAlbum("G")).toEqual(album);
    await expect(inbox.leaseOf(first).takeAlbum("G")).rejects.toBeInstanceOf(LeaseLostError);
    await inboxFor("after-crash").finish(rerun);
    // The message after the album runs next; the late item, once quiet, as a turn of its own.
    const next = await claimOne(inbox);
    expect(next.updateId).toBe(text);
    await inbox.finish(next);
    clock += ALBUM_SETTLE_MS;
    const alone = await claimOne(inbox);
    expect(alone.updateId).toBe(late);
    expect(await inbox.leaseOf(alone).takeAlbum("G")).toEqual([{ n: 4 }]);
    await inbox.finish(alone);
  });

  it("after a crash, SQLite runs interrupted updates again at once; PostgreSQL waits for the lease", async () => {
    const inbox = inboxFor("a");
    const id = nextId++;
    await inbox.add(id, "K", {});
    await inbox.claim();
    const restarted = inboxFor("restarted");
    const recovered = await restarted.recoverAfterCrash();
    if (kind === "sqlite") {
      expect(recovered).toBe(1);
    } else {
      expect(recovered).toBe(0);
      expect(await restarted.claim()).toBeUndefined();
      clock += 30_001;
    }
    const item = await claimOne(restarted);
    expect(item.updateId).toBe(id);
    await restarted.finish(item);
  });
  it("prunes finished updates older than the cut-off, in batches, and nothing unfinished", async () => {
    const inbox = inboxFor("a");
    // What earlier tests finished goes first, so the count below is this test's alone.
    await inbox.prune(new Date(++clock).toISOString());
    const [oldDone, oldFailed, oldPending, oldRunning, recentDone] = [
      nextId++,
      nextId++,
      nextId++,
      nextId++,
      nextId++,
    ];
    // Each chat of its own, so every update can be claimed at once.
    for (const id of [oldDone, oldFailed, oldRunning, recentDone])
      await inbox.add(id, `P${id}`, {});
    const claimed = await claimAll(inbox);
    expect(idsOf(claimed)).toEqual([oldDone, oldFailed, oldRunning, recentDone]);
    const [doneItem, failedItem, runningItem, recentItem] = claimed as InboxItem[];
    await inbox.finish(doneItem as InboxItem);
    await inbox.finish(failedItem as InboxItem, { error: "gave up" });
    await inbox.add(oldPending, null, {});
    const pendingItem = await claimOne(inbox);
    await inbox.release(pendingItem, "database away", 60 * 60 * 1000);
    const cutOff = new Date(clock + 1).toISOString();
    clock += 60_000;
    await inbox.finish(recentItem as InboxItem);

    expect(await inbox.prune(cutOff, 1)).toBe(2);
    const left = await handle.db
      .selectFrom("inbox")
      .select("update_id")
      .where("update_id", "in", [oldDone, oldFailed, oldPending, oldRunning, recentDone])
      .orderBy("update_id")
      .execute();
    expect(left.map((r) => r.update_id)).toEqual([oldPending, oldRunning, recentDone]);
    // Past the retention a redelivered update is new again: that is what the retention bounds.
    expect(await inbox.add(oldDone, "again", {})).toBe(true);
    expect(await inbox.add(recentDone, "again", {})).toBe(false);
    // Out of the way of the next tests: the update re-added above and the one held back.
    await inbox.finish(runningItem as InboxItem);
    await handle.db
      .updateTable("inbox")
      .set({ status: "done" })
      .where("update_id", "in", [oldDone, oldPending])
      .execute();
  });
  it("claims a backlog in batches: up to the limit, at most one per chat, oldest first", async () => {
    const inbox = inboxFor("batch");
    const burst = Array.from({ length: 7 }, () => nextId++);
    // Chats c0–c4 have one update each, c0 and c1 a second one after them.
    for (const [i, id] of burst.entries()) await inbox.add(id, `c${i % 5}`, {});
    const first = await inbox.claimMany(4);
    expect(idsOf(first)).toEqual(burst.slice(0, 4));
    const second = await inbox.claimMany(4);
    // c4's update; c0's and c1's second ones wait for their first.
    expect(idsOf(second)).toEqual([burst[4]]);
    expect(await inbox.claimMany(4)).toEqual([]);
    for (const item of [...first, ...second]) await inbox.finish(item);
    expect(idsOf(await inbox.claimMany(4))).toEqual(burst.slice(5));
  });

  it.each([1, 4])(
    "lets workers claiming at once (%i at a time) take every update once, one per chat at a time, in order",
    async (batch) => {
      const chats = Array.from({ length: 12 }, (_, i) => `race-${i}`);
      const ids = new Map<string, number[]>();
      for (let round = 0; round < 3; round++) {
        for (const chat of chats) {
          const id = nextId++;
          await inboxFor("x").add(id, chat, {});
          ids.set(chat, [...(ids.get(chat) ?? []), id]);
        }
      }
      const running = new Map<string, number>();
      const ran = new Map<string, number[]>();
      const overlaps: string[] = [];
      const worker = async (name: string) => {
        const inbox = inboxFor(name);
        let idle = 0;
        while (idle < 3) {
          const items = await inbox.claimMany(batch);
          if (items.length === 0) {
            idle++;
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          idle = 0;
          for (const item of items) {
            const chat = item.chatId as string;
            if (running.has(chat)) {
              overlaps.push(`${chat}: ${running.get(chat)} and ${item.updateId}`);
            }
            running.set(chat, item.updateId);
            ran.set(chat, [...(ran.get(chat) ?? []), item.updateId]);
          }
          await new Promise((resolve) => setImmediate(resolve));
          for (const item of items) {
            running.delete(item.chatId as string);
            await inbox.finish(item);
          }
        }
      };
      await Promise.all(["w1", "w2", "w3", "w4", "w5", "w6"].map(worker));
      expect(overlaps).toEqual([]);
      expect(Object.fromEntries(ran)).toEqual(Object.fromEntries(ids));
    },
  );

  it("keeps claiming after a migration adds a column (PostgreSQL keeps parsed statements)", async () => {
    const own = await createTestDatabase(kind);
    const single = openDatabase(own.target, { poolSize: 1 });
    try {
      await migrateToLatest(single.db, logger);
      const inbox = inboxFor("a", single);
      await inbox.add(1, "A", { n: 1 });
      const item = await claimOne(inbox);
      expect(item.updateId).toBe(1);
      await inbox.finish(item);
      await sql`alter table inbox add column note text`.execute(single.db);
      await inbox.add(2, "A", { n: 2 });
      expect(await inbox.claim()).toMatchObject({ updateId: 2, update: { n: 2 } });
    } finally {
      await single.close();
      await own.dispose();
    }
  });

  it("stores the errors it keeps scrubbed, and cannot be built without its scrubber", async () => {
    const token = "123456789:AAH-secret-bot-token-0123456789";
    const inbox = createInbox({
      db: handle.db,
      kind,
      workerId: "a",
      leaseMs: 30_000,
      now: () => clock,
      scrub: createScrubber(["gemini-key-hunter2"]),
    });
    const [failed, released] = [nextId++, nextId++];
    await inbox.add(failed, `scrub-${failed}`, {});
    await inbox.add(released, `scrub-${released}`, {});
    const [first, second] = await inbox.claimMany(2);
    await inbox.finish(first as InboxItem, {
      error: `Call to 'sendMessage' failed! (https://api.telegram.org/bot${token}/sendMessage)`,
    });
    await inbox.release(second as InboxItem, "Gemini refused key gemini-key-hunter2", 1_000);
    const rows = await handle.db
      .selectFrom("inbox")
      .select("error")
      .where("update_id", "in", [failed, released])
      .orderBy("update_id")
      .execute();
    expect(rows.map((row) => row.error)).toEqual([
      "Call to 'sendMessage' failed! (https://api.telegram.org/bot[REDACTED]/sendMessage)",
      "Gemini refused key [REDACTED]",
    ]);
    // @ts-expect-error without a scrubber a Telegram error would keep the bot token in its row
    void (() => createInbox({ db: handle.db, kind, workerId: "a", leaseMs: 30_000 }));
  });

  it("probes a write for /healthz, leaving nothing behind for any worker", async () => {
    const inbox = inboxFor("a");
    const before = await handle.db.selectFrom("inbox").select("update_id").execute();
    await Promise.all([inbox.probeWrite(), inboxFor("b").probeWrite(), inbox.probeWrite()]);
    expect(await handle.db.selectFrom("inbox").select("update_id").execute()).toEqual(before);
  });

  it("fails its write probe while the database cannot store an update, and passes again after", async () => {
    const inbox = inboxFor("a");
    const undo = await fillDiskForInbox(handle.db, kind);
    try {
      await expect(inbox.probeWrite()).rejects.toThrow(/disk is full|No space left/);
      await expect(inbox.add(nextId++, "full", {})).rejects.toThrow(/disk is full|No space left/);
      // Reads still answer: a plain "select 1" would call this database healthy.
      expect(await inbox.backlog()).toMatchObject({ pending: expect.any(Number) });
    } finally {
      await undo();
    }
    await inbox.probeWrite();
  });
});
