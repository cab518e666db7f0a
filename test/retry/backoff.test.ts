import { describe, expect, it } from "vitest";
import { backoffDelay, createBackoff, nextRetryDelay, pause } from "../../src/retry/backoff.js";

const policy = { baseMs: 1_000, maxMs: 8_000 };
/** Returns the given values in turn, as Math.random would return random ones. */
const sequence =
  (...values: number[]) =>
  () => {
    const value = values.shift();
    if (value === undefined) throw new Error("the test ran out of random numbers");
    return value;
  };

describe("backoffDelay", () => {
  it("draws each delay below a ceiling that doubles per retry, up to the cap", () => {
    const top = () => 0.999_999;
    expect([1, 2, 3, 4, 5, 6].map((retry) => backoffDelay(retry, policy, top))).toEqual([
      999, 1_999, 3_999, 7_999, 7_999, 7_999,
    ]);
  });

  it("spreads the delays of callers that failed together over the whole window (full jitter)", () => {
    const draws = [0, 0.25, 0.5, 0.75].map((r) => backoffDelay(3, policy, () => r));
    expect(draws).toEqual([0, 1_000, 2_000, 3_000]);
  });

  it("waits a server-given delay in full, plus up to a tenth of it (at most baseMs) at random", () => {
    expect(backoffDelay(1, policy, () => 0, 2_000)).toBe(2_000);
    expect(backoffDelay(1, policy, () => 0.5, 2_000)).toBe(2_100);
    // A tenth of 5 s is more than baseMs: the spread stops at 1 s.
    expect(backoffDelay(1, { baseMs: 300, maxMs: 60_000 }, () => 0.999, 5_000)).toBe(5_300);
  });

  it("caps a server-given delay at maxMs too", () => {
    expect(backoffDelay(1, policy, () => 0.5, 30_000)).toBe(8_000);
  });
});

describe("nextRetryDelay", () => {
  const budget = { ...policy, maxAttempts: 3, maxTotalMs: 5_000 };
  const half = () => 0.5;

  it("gives the backoff's delay while attempts and time are left", () => {
    expect(nextRetryDelay(1, 0, budget, half)).toBe(500);
    expect(nextRetryDelay(2, 1_000, budget, half)).toBe(1_000);
  });

  it("gives none after the last attempt", () => {
    expect(nextRetryDelay(3, 0, budget, half)).toBeUndefined();
  });

  it("gives none when the wait would take the loop past its total time", () => {
    expect(nextRetryDelay(1, 4_600, budget, half)).toBeUndefined();
    expect(nextRetryDelay(1, 0, budget, half, 6_000)).toBeUndefined();
  });
});

describe("createBackoff", () => {
  it("grows with consecutive failures and starts over after a success", () => {
    const backoff = createBackoff(policy, sequence(0.5, 0.5, 0.5, 0.5));
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([500, 1_000, 2_000]);
    expect(backoff.failures).toBe(3);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(500);
  });

  it("counts a failure with a server-given delay like any other", () => {
    const backoff = createBackoff(policy, sequence(0, 0.5));
    expect(backoff.next(3_000)).toBe(3_000);
    expect(backoff.next()).toBe(1_000);
  });
});

describe("pause", () => {
  it("ends early when its signal aborts", async () => {
    const abort = new AbortController();
    const paused = pause(60_000, abort.signal);
    abort.abort();
    await expect(paused).resolves.toBeUndefined();
  });

  it("returns at once for a signal aborted already", async () => {
    const abort = new AbortController();
    abort.abort();
    await expect(pause(60_000, abort.signal)).resolves.toBeUndefined();
  });
});
