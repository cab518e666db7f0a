import { describe, expect, it } from "vitest";
import { unlessStopped } from "../../src/retry/unless-stopped.js";

describe("unlessStopped", () => {
  it("gives the work's result, or its failure, when no stop comes first", async () => {
    const stop = new AbortController();
    expect(await unlessStopped(Promise.resolve(7), stop.signal)).toBe(7);
    expect(await unlessStopped(Promise.resolve(8), undefined)).toBe(8);
    await expect(unlessStopped(Promise.reject(new Error("broken")), stop.signal)).rejects.toThrow(
      "broken",
    );
  });

  it("gives undefined at the stop, or at once when it came before, and lets the work fail unseen", async () => {
    const stop = new AbortController();
    let fail = (_: Error) => {};
    const work = new Promise<number>((_, reject) => {
      fail = reject;
    });
    const waiting = unlessStopped(work, stop.signal);
    stop.abort();
    expect(await waiting).toBeUndefined();
    expect(await unlessStopped(new Promise<number>(() => {}), stop.signal)).toBeUndefined();
    // A rejection nobody awaits any more would end the process were it left unhandled.
    fail(new Error("after the stop"));
    await new Promise((resolve) => setImmediate(resolve));
  });
});
