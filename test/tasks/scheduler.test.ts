import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startScheduler } from "../../src/tasks/scheduler.js";
import { captureLogger } from "../helpers/logs.js";

const TICK_MS = 5_000;

describe("the scheduler told of a task added", () => {
  let clock = 1_000_000;
  /** When queueDue was asked, by the scheduler's clock. */
  let asked: number[] = [];
  let queued = 0;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    clock = 1_000_000;
    asked = [];
    queued = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** `firstLook`: what the first look for due tasks waits on before it answers. */
  function start(firstLook?: Promise<void>) {
    return startScheduler({
      tasks: {
        queueDue: async (now) => {
          asked.push(now);
          if (asked.length === 1) await firstLook;
          return [];
        },
      },
      intervalMs: TICK_MS,
      logger: captureLogger().logger,
      onQueued: () => queued++,
      now: () => clock,
    });
  }

  /** Moves both clocks on, letting what falls due run. */
  async function pass(ms: number) {
    clock += ms;
    await vi.advanceTimersByTimeAsync(ms);
  }

  it("queues a task due before the next tick at its time, not at the tick", async () => {
    const scheduler = start();
    await pass(0);
    expect(asked).toEqual([1_000_000]);
    scheduler.addedDueAt(clock + 1_200);
    await pass(1_199);
    expect(asked).toHaveLength(1);
    await pass(1);
    expect(asked).toEqual([1_000_000, 1_001_200]);
    await scheduler.stop();
  });

  it("queues a task due now at once", async () => {
    const scheduler = start();
    await pass(0);
    scheduler.addedDueAt(clock - 10);
    await pass(0);
    expect(asked).toEqual([1_000_000, 1_000_000]);
    await scheduler.stop();
  });

  it("looks again after a run under way when a task due now is added meanwhile", async () => {
    // The first look is still reading when the task is added.
    let release = () => {};
    const scheduler = start(new Promise<void>((resolve) => (release = resolve)));
    await pass(0);
    expect(asked).toHaveLength(1);
    scheduler.addedDueAt(clock);
    await pass(0);
    expect(asked).toHaveLength(1);
    release();
    await pass(0);
    expect(asked).toEqual([1_000_000, 1_000_000]);
    await scheduler.stop();
  });

  it("leaves a task due at the next tick or later to the ticks", async () => {
    const scheduler = start();
    await pass(0);
    scheduler.addedDueAt(clock + TICK_MS);
    await pass(TICK_MS - 1);
    expect(asked).toHaveLength(1);
    await pass(1);
    // The tick, alone.
    expect(asked).toEqual([1_000_000, 1_000_000 + TICK_MS]);
    await scheduler.stop();
  });

  it("runs no early queueing once stopped", async () => {
    const scheduler = start();
    await pass(0);
    scheduler.addedDueAt(clock + 1_000);
    await scheduler.stop();
    await pass(TICK_MS);
    expect(asked).toEqual([1_000_000]);
    expect(queued).toBe(0);
  });
});
