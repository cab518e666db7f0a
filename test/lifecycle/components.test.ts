import { describe, expect, it } from "vitest";
import { type Component, Components } from "../../src/lifecycle/components.js";

/** Components that write what happens to them into one journal. */
function journaled(options: { signal?: AbortSignal } = {}) {
  const journal: string[] = [];
  const stopFailures: string[] = [];
  const components = new Components({
    ...options,
    onStopFailure: (name, error) => stopFailures.push(`${name}: ${(error as Error).message}`),
  });
  const part = (name: string, extra: Partial<Component<string>> = {}): Component<string> => ({
    name,
    start: () => {
      journal.push(`start ${name}`);
      return name;
    },
    stop: (started) => {
      journal.push(`stop ${started}`);
    },
    ...extra,
  });
  /** A component whose stop fails with `message`. */
  const stubborn = (name: string, message: string) =>
    part(name, {
      stop: async () => {
        throw new Error(message);
      },
    });
  return { components, journal, stopFailures, part, stubborn };
}

describe("components", () => {
  it("start in order, each given what it needs from those before, and stop in reverse", async () => {
    const { components, journal, part } = journaled();
    const listener = await components.start(part("listener"));
    const lock = await components.start({
      name: "lock",
      start: async () => {
        journal.push(`start lock after ${listener}`);
        return { held: true };
      },
      stop: (started) => {
        journal.push(`stop lock held=${started.held}`);
      },
    });
    expect(lock).toEqual({ held: true });
    await components.start(part("dispatcher"));
    expect(journal).toEqual(["start listener", "start lock after listener", "start dispatcher"]);
    await components.stop();
    expect(journal.slice(3)).toEqual(["stop dispatcher", "stop lock held=true", "stop listener"]);
  });

  it("stop each component once, however often they are stopped", async () => {
    const { components, journal, part } = journaled();
    await components.start(part("a"));
    await components.stop();
    await components.stop();
    expect(journal).toEqual(["start a", "stop a"]);
  });

  it("skip a component that has nothing to stop", async () => {
    const { components, journal, part } = journaled();
    await components.start(part("a"));
    await components.start({ name: "check", start: () => journal.push("checked") });
    await components.start(part("b"));
    await components.stop();
    expect(journal).toEqual(["start a", "checked", "start b", "stop b", "stop a"]);
  });

  it("stop those already started when a start fails, and throw its error", async () => {
    const { components, journal, part } = journaled();
    await components.start(part("a"));
    await components.start(part("b"));
    const failing = part("c", {
      start: async () => {
        throw new Error("port taken");
      },
    });
    await expect(components.start(failing)).rejects.toThrow("port taken");
    expect(journal).toEqual(["start a", "start b", "stop b", "stop a"]);
    await components.stop();
    expect(journal).toHaveLength(4);
  });

  it("start nothing once stopped, and stop those already started", async () => {
    const stop = new AbortController();
    const { components, journal, part } = journaled({ signal: stop.signal });
    await components.start(part("a"));
    stop.abort("SIGTERM");
    await expect(components.start(part("b"))).rejects.toBe("SIGTERM");
    expect(journal).toEqual(["start a", "stop a"]);
  });

  it("hand the stop request to a start that waits, which ends on it", async () => {
    const stop = new AbortController();
    const { components, journal, part } = journaled({ signal: stop.signal });
    await components.start(part("listener"));
    let waiting = () => {};
    const waitingStarted = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const lock = components.start({
      name: "lock",
      start: (signal) =>
        new Promise<string>((_, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
          waiting();
        }),
    });
    await waitingStarted;
    stop.abort("SIGINT");
    await expect(lock).rejects.toBe("SIGINT");
    expect(journal).toEqual(["start listener", "stop listener"]);
  });

  it("stop the rest when one stop fails, tell each failure, and throw the first", async () => {
    const { components, journal, stopFailures, part, stubborn } = journaled();
    await components.start(part("a"));
    await components.start(
      part("b", {
        stop: () => {
          throw new Error("b would not stop");
        },
      }),
    );
    await components.start(stubborn("c", "c would not stop"));
    await expect(components.stop()).rejects.toThrow("c would not stop");
    expect(stopFailures).toEqual(["c: c would not stop", "b: b would not stop"]);
    expect(journal).toEqual(["start a", "start b", "start c", "stop a"]);
  });

  it("throw a failed start's own error when stopping the others fails too", async () => {
    const { components, journal, stopFailures, part, stubborn } = journaled();
    await components.start(part("a"));
    await components.start(stubborn("b", "b would not stop"));
    const failing = part("c", {
      start: () => {
        throw new Error("Telegram rejected the token");
      },
    });
    await expect(components.start(failing)).rejects.toThrow("Telegram rejected the token");
    expect(stopFailures).toEqual(["b: b would not stop"]);
    expect(journal).toEqual(["start a", "start b", "stop a"]);
  });
});
