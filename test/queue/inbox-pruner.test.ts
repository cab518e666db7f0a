import { describe, expect, it } from "vitest";
import { startInboxPruner } from "../../src/queue/inbox-pruner.js";
import { captureLogger } from "../helpers/logs.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const NOW = Date.parse("2026-11-30T12:00:00.000Z");

/** An inbox whose prune records its cut-offs and answers from a script. */
function scriptedInbox(answers: Array<number | Error>) {
  const cutOffs: string[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let gated = false;
  return {
    cutOffs,
    holdNext() {
      gated = true;
    },
    release,
    inbox: {
      async prune(before: string) {
        cutOffs.push(before);
        if (gated) await gate;
        const answer = answers.shift() ?? 0;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    },
  };
}

type Script = ReturnType<typeof scriptedInbox>;

const start = (script: Script, logger: ReturnType<typeof captureLogger>["logger"], days = 1) =>
  startInboxPruner({
    inbox: script.inbox,
    retentionMs: days * DAY_MS,
    intervalMs: DAY_MS,
    logger,
    now: () => NOW,
  });

describe("inbox pruner", () => {
  it("prunes at start with the retention's cut-off and logs what it deleted", async () => {
    const { logger, lines } = captureLogger();
    const script = scriptedInbox([3]);
    const pruner = start(script, logger, 7);
    await pruner.stop();
    expect(script.cutOffs).toEqual(["2026-11-23T12:00:00.000Z"]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "deleted finished inbox updates", deleted: 3 }),
    );
  });

  it("logs a failure and prunes again next time", async () => {
    const { logger, lines } = captureLogger();
    const script = scriptedInbox([new Error("database away"), 1]);
    const pruner = start(script, logger);
    await pruner.prune();
    await pruner.prune();
    await pruner.stop();
    expect(script.cutOffs).toHaveLength(2);
    const warning = lines.find((l) => l.msg.startsWith("could not prune the inbox"));
    expect(warning?.err).toMatchObject({ message: "database away" });
    expect(lines).toContainEqual(expect.objectContaining({ deleted: 1 }));
  });

  it("joins a prune in progress, and stop waits for it", async () => {
    const { logger } = captureLogger();
    const script = scriptedInbox([2]);
    script.holdNext();
    const pruner = start(script, logger);
    let stopped = false;
    const stopping = pruner.stop().then(() => {
      stopped = true;
    });
    void pruner.prune();
    // Every pending microtask runs before this resolves: a stop that did not wait would be done.
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    expect(script.cutOffs).toHaveLength(1);
    script.release();
    await stopping;
    expect(stopped).toBe(true);
  });
});
