import type { Interface } from "node:readline";

export type LineQueue = {
  /**
   * The next line typed, in order, whether it was typed before or after the call; undefined at
   * the end of the input, or once `signal` aborts.
   */
  next(signal?: AbortSignal): Promise<string | undefined>;
};

/**
 * The lines of a readline interface for two readers: the chat's loop, which takes messages, and
 * a question asked during a turn (an approval), which takes the line that answers it. Lines
 * typed while a turn runs wait here, so piped input answers in the order it was written.
 */
export function queueLines(lines: Interface): LineQueue {
  const queued: string[] = [];
  let closed = false;
  let waiter: ((line: string | undefined) => void) | undefined;
  const hand = (line: string | undefined) => {
    const take = waiter;
    waiter = undefined;
    take?.(line);
  };
  lines.on("line", (line: string) => {
    if (waiter) hand(line);
    else queued.push(line);
  });
  lines.once("close", () => {
    closed = true;
    hand(undefined);
  });
  return {
    next(signal) {
      const line = queued.shift();
      if (line !== undefined) return Promise.resolve(line);
      if (closed || signal?.aborted) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const onAbort = () => hand(undefined);
        signal?.addEventListener("abort", onAbort, { once: true });
        waiter = (typed) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(typed);
        };
      });
    },
  };
}
