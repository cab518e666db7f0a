import { describe, expect, it } from "vitest";
import { createSharedLimit, type Pass } from "../../src/retry/shared-limit.js";

const policy = { baseMs: 1_000, maxMs: 300_000 };
const FAR = Number.MAX_SAFE_INTEGER;

/** A limit on a clock the test moves; its sleep moves the clock by what it was asked to wait. */
function limitOnClock(random = () => 0) {
  let clock = 1_000_000;
  const sleeps: number[] = [];
  const limited: number[] = [];
  const limit = createSharedLimit({
    policy,
    random,
    now: () => clock,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock += ms;
    },
    onLimited: (ms) => limited.push(ms),
  });
  return {
    limit,
    sleeps,
    limited,
    now: () => clock,
    advance(ms: number) {
      clock += ms;
    },
  };
}

async function enter(limit: ReturnType<typeof limitOnClock>["limit"], deadline = FAR) {
  const pass = await limit.enter(deadline);
  if (!pass) throw new Error("the limit let nothing through");
  return pass;
}

/** Resolves with whether `promise` settled within a few turns of the event loop. */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("createSharedLimit", () => {
  it("lets calls through at once while nothing was turned away", async () => {
    const t = limitOnClock();
    const passes = await Promise.all([enter(t.limit), enter(t.limit), enter(t.limit)]);
    for (const pass of passes) pass.done({ limited: false });
    expect(t.sleeps).toEqual([]);
    expect(t.limit.closedForMs()).toBe(0);
  });

  it("holds every caller back for the server's delay after one 429", async () => {
    const t = limitOnClock();
    (await enter(t.limit)).done({ limited: true, serverDelayMs: 17_000 });
    expect(t.limited).toEqual([17_000]);
    expect(t.limit.closedForMs()).toBe(17_000);
    const next = await enter(t.limit);
    expect(t.sleeps).toEqual([17_000]);
    next.done({ limited: false });
  });

  it("counts the 429s of calls already out when it closed as one closing", async () => {
    const t = limitOnClock(() => 0.5);
    const out = await Promise.all([enter(t.limit), enter(t.limit), enter(t.limit)]);
    for (const pass of out) pass.done({ limited: true });
    expect(t.limited).toHaveLength(3);
    // One closing without a server delay: below 1 s, drawn at 0.5. Three would be below 4 s.
    expect(t.limit.closedForMs()).toBe(500);
  });

  it("lets a late 429 lengthen the wait by its own server delay, not start another closing", async () => {
    const t = limitOnClock();
    const [first, second] = await Promise.all([enter(t.limit), enter(t.limit)]);
    first?.done({ limited: true, serverDelayMs: 5_000 });
    second?.done({ limited: true, serverDelayMs: 9_000 });
    expect(t.limit.closedForMs()).toBe(9_000);
  });

  it("after the wait sends one call first; the others wait for it and go when it is not turned away", async () => {
    const t = limitOnClock();
    (await enter(t.limit)).done({ limited: true, serverDelayMs: 2_000 });
    const probe = await enter(t.limit);
    const waiting = [t.limit.enter(FAR), t.limit.enter(FAR)];
    expect(await settledSoon(Promise.race(waiting))).toBe(false);
    probe.done({ limited: false });
    const passes = (await Promise.all(waiting)) as Pass[];
    expect(passes).toHaveLength(2);
    for (const pass of passes) pass.done({ limited: false });
    // Open again: the next call goes alone no more.
    expect(await settledSoon(t.limit.enter(FAR))).toBe(true);
  });

  it("closes again, for longer, when the probe is turned away too", async () => {
    const t = limitOnClock(() => 0.999);
    (await enter(t.limit)).done({ limited: true });
    expect(t.limit.closedForMs()).toBe(999);
    const probe = await enter(t.limit);
    const waiting = t.limit.enter(FAR);
    probe.done({ limited: true });
    expect(t.limit.closedForMs()).toBe(1_998);
    const next = (await waiting) as Pass;
    expect(t.sleeps).toEqual([999, 1_998]);
    next.done({ limited: false });
  });

  it("says at once when the limit holds past a caller's deadline, without waiting", async () => {
    const t = limitOnClock();
    (await enter(t.limit)).done({ limited: true, serverDelayMs: 60_000 });
    expect(await t.limit.enter(t.now() + 45_000)).toBeUndefined();
    expect(t.sleeps).toEqual([]);
  });

  it("lets nothing through for an aborted caller", async () => {
    const t = limitOnClock();
    const abort = new AbortController();
    abort.abort();
    expect(await t.limit.enter(FAR, abort.signal)).toBeUndefined();
  });

  it("gives up waiting for a probe at the caller's deadline", async () => {
    const t = limitOnClock();
    (await enter(t.limit)).done({ limited: true, serverDelayMs: 1_000 });
    const probe = await enter(t.limit);
    // Real time: the deadline is 20 ms away by the limit's clock.
    expect(await t.limit.enter(t.now() + 20)).toBeUndefined();
    probe.done({ limited: false });
  });

  it("takes only the first report of a pass", async () => {
    const t = limitOnClock();
    const pass = await enter(t.limit);
    pass.done({ limited: false });
    pass.done({ limited: true, serverDelayMs: 5_000 });
    expect(t.limit.closedForMs()).toBe(0);
  });
});
