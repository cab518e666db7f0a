import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, calls, type RecordedRequest, text } from "../fakes/gemini.js";
import { promptText } from "../fakes/gemini-cache.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { CHAT_MODEL, type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";

/**
 * Gemini's implicit cache serves the prefix a request shares with the ones before it. Koroku
 * keeps it: every request of a conversation is the one before it with new events appended (its
 * closing bracket aside), whatever the day, across a restart, and from a compaction's new summary
 * on.
 */

const chatRequests = (h: Harness) => h.fake.requests.filter((r) => r.model === CHAT_MODEL);

/** The previous prompt without the bracket that closes its contents. */
const openEnded = (request: RecordedRequest) => promptText(request.body).slice(0, -1);

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

/** Each chat request starts, byte for byte, with the one before it; new contents follow. */
function expectAppendOnly(requests: readonly RecordedRequest[]): void {
  for (let i = 1; i < requests.length; i++) {
    const previous = openEnded(requests[i - 1] as RecordedRequest);
    const next = promptText((requests[i] as RecordedRequest).body);
    expect(next.slice(0, previous.length), `request ${i} rewrote the one before`).toBe(previous);
    expect(next.slice(previous.length, previous.length + 2)).toBe(",{");
  }
}

describe.each(DATABASE_KINDS)("a stable prompt prefix on %s", (kind) => {
  let h: Harness;
  afterEach(async () => {
    vi.useRealTimers();
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  it("appends each turn's events to the request before, over midnight and a restart", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-03-03T22:58:00Z"));
    h = await startHarness({ kind, env: { TIME_ZONE: "Europe/Berlin" } });
    // A file of about 6,000 tokens: its read makes the context worth caching.
    mkdirSync(h.workspaceOf("c1"), { recursive: true });
    writeFileSync(join(h.workspaceOf("c1"), "notes.md"), "line of notes\n".repeat(1_800));
    h.fake.script(
      // Keys out of order, and an integer-like one: the stored call must come back the same.
      calls([
        { name: "read_file", args: { path: "notes.md", zeta: 1, alpha: { "2": 0, b: 1 } } },
        { name: "read_file", args: { path: "notes.md" } },
      ]),
      text("Read them."),
      text("Good night."),
      call("get_current_time", { timezone: "Europe/Berlin" }),
      text("It is past midnight."),
    );
    await h.app.agent.runTurn("c1", { text: "read my notes" });
    vi.setSystemTime(new Date("2026-03-03T22:59:00Z"));
    await h.app.agent.runTurn("c1", { text: "thanks" });
    // Another process (nothing cached in memory) on the next day.
    vi.setSystemTime(new Date("2026-03-03T23:01:00Z"));
    const restarted = await h.restart();
    await restarted.agent.runTurn("c1", { text: "what time is it?" });

    const requests = chatRequests(h);
    expect(requests).toHaveLength(5);
    expectAppendOnly(requests);
    const system = JSON.stringify(requests.map((r) => r.body.systemInstruction));
    expect(new Set(requests.map((r) => JSON.stringify(r.body.systemInstruction))).size).toBe(1);
    expect(system).not.toMatch(/March|2026/);
    // The user's messages carry their own time, the newest one today's date.
    const stamps = requests[4]?.body.contents
      .filter((c) => c.role === "user" && c.parts?.some((p) => p.text !== undefined))
      .map((c) => c.parts?.[0]?.text);
    expect(stamps).toEqual([
      "[Tuesday, 3 March 2026 at 23:58]",
      "[Tuesday, 3 March 2026 at 23:59]",
      "[Wednesday, 4 March 2026 at 00:01]",
    ]);
    // What the fake's implicit cache made of it: the prefix the request before held.
    const usage = await restarted.usage.since("c1", new Date(0));
    expect(usage[0]?.usage.cachedTokens).toBeGreaterThan(3 * 6_000);
  });

  it("starts again from each new summary, and appends from there", async () => {
    h = await startHarness({ kind, env: { COMPACTION_MAX_EVENTS: "6" } });
    h.fake.scriptFor(SUMMARY_MODEL, ...[1, 2, 3, 4, 5].map((n) => text(`Summary ${n}.`)));
    for (let turn = 1; turn <= 9; turn++) await h.app.agent.runTurn("c1", { text: `q${turn}` });
    // The chat requests between two summaries.
    const segments: RecordedRequest[][] = [[]];
    for (const request of h.fake.requests) {
      if (request.model === SUMMARY_MODEL) segments.push([]);
      else segments.at(-1)?.push(request);
    }
    expect(segments.length).toBeGreaterThanOrEqual(3);
    for (const segment of segments) expectAppendOnly(segment);
    for (const [i, segment] of segments.slice(1).entries()) {
      const first = segment[0] as RecordedRequest;
      const last = (segments[i] as RecordedRequest[]).at(-1) as RecordedRequest;
      expect(first.body.contents[0]?.parts?.[0]?.text).toContain(`Summary ${i + 1}.`);
      // Instruction and tools still open both requests: only the summary on differs.
      const shared = commonPrefix(promptText(last.body), promptText(first.body));
      const head = JSON.stringify(first.body.systemInstruction) + JSON.stringify(first.body.tools);
      expect(shared).toBeGreaterThan(head.length);
      expect(shared).toBeLessThan(openEnded(last).length);
    }
  });

  it("keeps the tools declared once the budget is spent, the notice last", async () => {
    h = await startHarness({ kind, env: { MAX_TOOL_CALLS_PER_TURN: "2" } });
    h.fake.script(
      call("get_current_time", { n: 1 }),
      call("get_current_time", { n: 2 }),
      text("I stop here."),
      text("Next turn."),
    );
    await h.app.agent.runTurn("c1", { text: "loop" });
    await h.app.agent.runTurn("c1", { text: "go on" });
    const requests = chatRequests(h);
    expect(requests).toHaveLength(4);
    expectAppendOnly(requests.slice(0, 3));
    const spent = promptText((requests[2] as RecordedRequest).body);
    const notice = spent.lastIndexOf(',{"text":"[System notice]');
    expect(notice).toBeGreaterThan(0);
    expect(
      promptText((requests[3] as RecordedRequest).body).startsWith(spent.slice(0, notice)),
    ).toBe(true);
    expect(requests[2]?.body.toolConfig?.functionCallingConfig?.mode).toBe("NONE");
    expect(requests[2]?.body.tools).toEqual(requests[0]?.body.tools);
  });
});
