import { describe, expect, it } from "vitest";
import { createReadiness } from "../../src/http/readiness.js";
import { captureLogger } from "../helpers/logs.js";

/** A probe whose outcome the test sets, counting its runs; each run waits for `settle`. */
function scriptedProbe() {
  let outcome: Error | undefined;
  let settle: () => void = () => {};
  const probe = {
    runs: 0,
    fail(error: Error | undefined) {
      outcome = error;
    },
    /** Ends the run in progress. */
    settle: () => settle(),
    run: async () => {
      probe.runs++;
      await new Promise<void>((resolve) => {
        settle = resolve;
      });
      if (outcome) throw outcome;
    },
  };
  return probe;
}

describe("readiness (/healthz)", () => {
  it("is not ready while starting, and probes nothing then", async () => {
    const probe = scriptedProbe();
    const readiness = createReadiness({ logger: captureLogger().logger });
    expect(await readiness.check()).toEqual({ ready: false, status: "starting" });
    readiness.stopping();
    // Ready after a stop began: never.
    readiness.ready(probe.run);
    expect(await readiness.check()).toEqual({ ready: false, status: "stopping" });
    expect(probe.runs).toBe(0);
  });

  it("probes once for a storm of checks, and again only once the outcome is older than cacheMs", async () => {
    let clock = 0;
    const probe = scriptedProbe();
    const readiness = createReadiness({
      logger: captureLogger().logger,
      cacheMs: 1_000,
      now: () => clock,
    });
    readiness.ready(probe.run);
    const storm = Array.from({ length: 50 }, () => readiness.check());
    probe.settle();
    for (const health of await Promise.all(storm))
      expect(health).toEqual({ ready: true, status: "ok" });
    clock += 999;
    expect(await readiness.check()).toEqual({ ready: true, status: "ok" });
    expect(probe.runs).toBe(1);
    clock += 1;
    const later = readiness.check();
    probe.settle();
    expect(await later).toEqual({ ready: true, status: "ok" });
    expect(probe.runs).toBe(2);
  });

  it("is not ready while the probe fails, says so once in the log, and once when it passes again", async () => {
    let clock = 0;
    const { logger, lines } = captureLogger();
    const probe = scriptedProbe();
    const readiness = createReadiness({ logger, cacheMs: 1_000, now: () => clock });
    readiness.ready(probe.run);
    const checkNow = async () => {
      clock += 1_000;
      const health = readiness.check();
      probe.settle();
      return health;
    };
    probe.fail(new Error("database or disk is full"));
    expect(await checkNow()).toEqual({ ready: false, status: "database cannot store updates" });
    expect(await checkNow()).toEqual({ ready: false, status: "database cannot store updates" });
    probe.fail(undefined);
    expect(await checkNow()).toEqual({ ready: true, status: "ok" });
    expect(await checkNow()).toEqual({ ready: true, status: "ok" });
    expect(lines.map((line) => [line.msg, (line.err as { message?: string })?.message])).toEqual([
      [
        "the database cannot store updates: /healthz answers 503 until it can",
        "database or disk is full",
      ],
      ["the database stores updates again: /healthz answers 200", undefined],
    ]);
  });

  it("says stopping when a stop begins while a probe runs", async () => {
    const probe = scriptedProbe();
    const readiness = createReadiness({ logger: captureLogger().logger });
    readiness.ready(probe.run);
    const asked = readiness.check();
    readiness.stopping();
    probe.settle();
    expect(await asked).toEqual({ ready: false, status: "stopping" });
  });
});
