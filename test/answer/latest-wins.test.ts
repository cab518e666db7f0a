import { afterEach, describe, expect, it, vi } from "vitest";
import { LatestWins } from "../../src/answer/latest-wins.js";

/** A LatestWins whose sends end when the test says, recording what went out. */
function sender(options: { intervalMs?: number; unchanged?: string } = {}) {
  const sent: string[] = [];
  const pending: { value: string; end(error?: Error): void }[] = [];
  const failures: string[] = [];
  const delivered: string[] = [];
  let onFailure: (value: string) => void = () => {};
  const latest = new LatestWins<string>({
    send: (value) =>
      value === options.unchanged
        ? undefined
        : () =>
            new Promise<void>((resolve, reject) => {
              sent.push(value);
              pending.push({ value, end: (error) => (error ? reject(error) : resolve()) });
            }),
    intervalMs: () => options.intervalMs ?? 0,
    sent: (value) => delivered.push(value),
    failed: (_error, value) => {
      failures.push(value);
      onFailure(value);
    },
  });
  /** Ends the oldest send under way, and lets what follows it start. */
  const end = async (error?: Error) => {
    pending.shift()?.end(error);
    await settle();
  };
  return {
    latest,
    sent,
    delivered,
    failures,
    end,
    onFailure: (f: (value: string) => void) => {
      onFailure = f;
    },
  };
}

/** Lets the promise callbacks queued so far run (the end of a send, and the next one's start). */
const settle = (): Promise<unknown> =>
  vi.isFakeTimers()
    ? vi.advanceTimersByTimeAsync(0)
    : new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe("latest value wins", () => {
  it("sends one at a time; of the values offered meanwhile only the newest goes out", async () => {
    const s = sender();
    s.latest.offer("a");
    s.latest.offer("b");
    s.latest.offer("c");
    expect(s.sent).toEqual(["a"]);
    await s.end();
    expect(s.sent).toEqual(["a", "c"]);
    await s.end();
    expect(s.delivered).toEqual(["a", "c"]);
  });

  it("drops a value whose sending would change nothing, without starting the interval", async () => {
    const s = sender({ intervalMs: 60_000, unchanged: "same" });
    s.latest.offer("same");
    s.latest.offer("new");
    expect(s.sent).toEqual(["new"]);
  });

  it("keeps the interval between two sends, and a hold for longer", async () => {
    vi.useFakeTimers();
    const s = sender({ intervalMs: 100 });
    s.latest.offer("a");
    await s.end();
    s.latest.offer("b");
    await vi.advanceTimersByTimeAsync(99);
    expect(s.sent).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.sent).toEqual(["a", "b"]);
    s.latest.holdFor(1_000);
    await s.end();
    s.latest.offer("c");
    await vi.advanceTimersByTimeAsync(999);
    expect(s.sent).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.sent).toEqual(["a", "b", "c"]);
  });

  it("again: a failed value goes again at once, unless a newer one waits", async () => {
    const s = sender({ intervalMs: 60_000 });
    s.onFailure(() => s.latest.again());
    s.latest.offer("a");
    await s.end(new Error("refused"));
    expect(s.sent).toEqual(["a", "a"]);
    s.latest.offer("b");
    await s.end(new Error("refused"));
    expect(s.sent).toEqual(["a", "a", "b"]);
    expect(s.failures).toEqual(["a", "a"]);
  });

  it("sends nothing once closed, and its close ends with the send under way", async () => {
    const s = sender();
    s.latest.offer("a");
    s.latest.offer("b");
    let closed = false;
    const closing = s.latest.close().then(() => {
      closed = true;
    });
    await settle();
    expect(closed).toBe(false);
    await s.end(new Error("aborted"));
    await closing;
    s.latest.offer("c");
    expect(s.sent).toEqual(["a"]);
    // A send that fails after the close is no failure of the live view.
    expect(s.failures).toEqual([]);
  });
});
