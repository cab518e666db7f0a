import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GeminiRefusedError } from "../../src/agent/gemini-errors.js";
import type { AgentHookEvents } from "../../src/agent/hooks.js";
import { planCompaction } from "../../src/session/compaction-plan.js";
import type { SessionEvent } from "../../src/session/events.js";
import { historyLines, historyLineText } from "../../src/session/history-view.js";
import { memoryDate } from "../../src/session/memory-files.js";
import type { StoredSession } from "../../src/session/store.js";
import {
  call,
  combine,
  empty,
  type RecordedRequest,
  status,
  text,
  thought,
} from "../fakes/gemini.js";
import { CHAT_MODEL, type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";
import { scopeSearch } from "../helpers/search.js";

const TOO_LONG =
  "The input token count (1048581) exceeds the maximum number of tokens allowed (1048576).";
const chatRequests = (h: Harness) => h.fake.requests.filter((r) => r.model === CHAT_MODEL);
const summaryRequests = (h: Harness) => h.fake.requests.filter((r) => r.model === SUMMARY_MODEL);
const body = (r: RecordedRequest | undefined) => JSON.stringify(r?.body.contents ?? []);

describe("compaction through the agent", () => {
  let h: Harness;
  afterEach(async () => {
    // The strict fake refused nothing: no orphan responses, no lost signatures, ever.
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  async function talk(chat: string, turns: string[]) {
    for (const q of turns) {
      h.fake.scriptFor(CHAT_MODEL, text(`answer to ${q}`));
      await h.app.agent.runTurn(chat, { text: q });
    }
  }

  it("compacts on the event count, keeping whole recent turns and the current message verbatim", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "6" } });
    const notices: AgentHookEvents["compaction"][] = [];
    h.app.hooks.on("compaction", (e) => notices.push(e));
    h.fake.scriptFor(
      SUMMARY_MODEL,
      combine(thought("hidden reasoning"), text("The user asked q1 and q2.")),
    );
    await talk("c1", ["q1", "q2", "q3", "q4"]);

    expect(summaryRequests(h)).toHaveLength(1);
    const transcript = body(summaryRequests(h)[0]);
    expect(transcript).toContain("q1");
    expect(transcript).toContain("answer to q2");
    expect(transcript).not.toContain("q3");
    expect(transcript).not.toContain("q4");
    expect(summaryRequests(h)[0]?.body.tools).toBeUndefined();

    const lastChat = chatRequests(h).at(-1);
    const contents = lastChat?.body.contents ?? [];
    expect(JSON.stringify(contents[0])).toContain("Summary of our earlier conversation");
    expect(JSON.stringify(contents[0])).toContain("The user asked q1 and q2.");
    expect(JSON.stringify(contents[0])).not.toContain("hidden reasoning");
    expect(body(lastChat)).not.toContain("answer to q1");
    expect(body(lastChat)).toContain("answer to q3");
    expect(contents.at(-1)?.parts?.at(-1)?.text).toBe("q4");

    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({
      chatId: "c1",
      summarizedEvents: 4,
      eventsBefore: 7,
      eventsAfter: 4,
    });
    const line = h.logs.find((l) => l.msg === "compacted the conversation");
    expect(line).toMatchObject({ events_before: 7, events_after: 4 });
    expect(typeof line?.duration_ms).toBe("number");
  });

  it("compacts on prompt tokens measured by Gemini plus the estimate since", async () => {
    // Above the system instruction and tools, which every prompt carries.
    h = await startHarness({ env: { COMPACTION_MAX_TOKENS: "3000" } });
    h.fake.scriptFor(CHAT_MODEL, text("a1"), { ...text("a2"), usage: { promptTokenCount: 5000 } });
    h.fake.scriptFor(SUMMARY_MODEL, text("summary one"));
    await h.app.agent.runTurn("c1", { text: "q1" });
    await h.app.agent.runTurn("c1", { text: "q2" });
    expect(summaryRequests(h)).toHaveLength(0);
    h.fake.scriptFor(CHAT_MODEL, text("a3"));
    await h.app.agent.runTurn("c1", { text: "q3" });
    expect(summaryRequests(h)).toHaveLength(1);
    const stats = await h.app.store.stats("c1");
    expect(stats.compactions).toBe(1);
    expect(stats.tokens).toBeLessThan(3000);
  });

  it("never separates function calls from their responses, and rolls the previous summary in", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "8" } });
    h.fake.scriptFor(SUMMARY_MODEL, ...[1, 2, 3, 4, 5, 6].map((n) => text(`SUMMARY #${n}`)));
    for (let i = 1; i <= 6; i++) {
      h.fake.scriptFor(CHAT_MODEL, call("get_current_time"), call("list_files"), text(`done ${i}`));
      await h.app.agent.runTurn("c1", { text: `task ${i}` });
    }
    const made = summaryRequests(h).length;
    expect(made).toBeGreaterThanOrEqual(2);
    for (let n = 2; n <= made; n++)
      expect(body(summaryRequests(h)[n - 1])).toContain(`SUMMARY #${n - 1}`);
    const context = await h.app.store.loadContext("c1");
    const first = context.events[0]?.event as SessionEvent;
    expect(first.role).toBe("user");
    expect(first.parts[0]?.kind).toBe("text");
    expect(context.summary?.event.summary[0]?.text).toBe(`SUMMARY #${made}`);
  });

  it("leaves the history unchanged and answers anyway when the summary call fails", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, status(400, "Request contains an invalid argument."));
    await talk("c1", ["q1", "q2"]);
    h.fake.scriptFor(CHAT_MODEL, text("answered"));
    expect((await h.app.agent.runTurn("c1", { text: "q3" })).text).toBe("answered");
    const context = await h.app.store.loadContext("c1");
    expect(context.summary).toBeUndefined();
    expect(context.events).toHaveLength(6);
    expect(h.logs.some((l) => l.msg.includes("compaction failed"))).toBe(true);
  });

  it("says why a compaction failed in words fit for the chat, without the call's internals", async () => {
    h = await startHarness();
    await talk("c1", ["q1", "q2"]);
    h.fake.scriptFor(SUMMARY_MODEL, status(400, "API key not valid. Please pass a valid API key."));
    expect(await h.app.compactor.compact("c1")).toMatchObject({
      status: "failed",
      reason: "Gemini refused the request: API key not valid. Please pass a valid API key",
    });
  });

  it("tries a failing summary once per turn, not before every model call", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, status(400, "no"), status(400, "no"), text("summary"));
    await talk("c1", ["q1", "q2"]);
    h.fake.scriptFor(CHAT_MODEL, call("get_current_time"), call("list_files"), text("done"));
    expect((await h.app.agent.runTurn("c1", { text: "q3" })).text).toBe("done");
    expect(summaryRequests(h)).toHaveLength(1);
    await talk("c1", ["q4"]);
    expect(summaryRequests(h)).toHaveLength(2);
  });

  it("writes neither summary nor memory once the chat's guard refuses after the summary call", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, text("a summary nobody may store"));
    await talk("c1", ["q1", "q2"]);
    const refusal = new Error("lease lost");
    const guard = async () => {
      if (summaryRequests(h).length > 0) throw refusal;
    };
    await expect(h.app.agent.runTurn("c1", { text: "q3", guard })).rejects.toBe(refusal);
    expect(summaryRequests(h)).toHaveLength(1);
    expect((await h.app.store.stats("c1")).compactions).toBe(0);
    expect(existsSync(join(h.dirs.memory, "c1"))).toBe(false);
  });

  it.each([
    ["an empty summary", text("   ")],
    ["a blocked summary", empty("SAFETY")],
  ])(
    "stores 'Summary unavailable.' for %s, loads it after a restart, writes the memory file",
    async (_, reply) => {
      h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
      h.fake.scriptFor(SUMMARY_MODEL, reply);
      await talk("-100123", ["q1", "q2", "q3"]);
      const restarted = await h.restart();
      h.fake.scriptFor(CHAT_MODEL, text("after restart"));
      await restarted.agent.runTurn("-100123", { text: "q4" });
      expect(JSON.stringify(chatRequests(h).at(-1)?.body.contents[0])).toContain(
        "Summary unavailable.",
      );

      const folder = join(h.dirs.memory, "-100123");
      expect(readdirSync(folder)).toEqual([`${memoryDate(new Date())}.md`]);
      const file = readFileSync(join(folder, `${memoryDate(new Date())}.md`), "utf8");
      expect(file).toMatch(/^\[\d{2}:\d{2}\]: Summary unavailable\.\n/);
      expect(h.logs.some((l) => l.msg.includes("the summary model returned no text"))).toBe(true);
    },
  );

  it("keeps compacted turns reachable by /history and search_history", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, text("They talked about zebras."));
    await talk("c1", ["zebra one", "q2", "q3"]);
    expect((await h.app.store.loadContext("c1")).summary).toBeDefined();
    const lines = historyLines(await h.app.store.lastTurns("c1", 10)).map(historyLineText);
    expect(lines).toContain("You: zebra one");
    expect(lines).toContain("[Summary of earlier conversation] They talked about zebras.");
    // Words are not stemmed: a prefix finds "zebras" too.
    const hits = await scopeSearch(h.app.database.db)("c1", "zebra*", { limit: 10 });
    expect(hits.map((x) => x.role).sort()).toEqual(["model", "summary", "user"]);
  });

  it("keeps what the previous summary said when the next one comes back blocked", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, text("They talked about zebras."), empty("SAFETY"));
    await talk("c1", ["zebra one", "q2", "q3", "q4", "q5"]);
    expect(summaryRequests(h)).toHaveLength(2);
    const { summary } = await h.app.store.loadContext("c1");
    expect(summary?.event.summary[0]?.text).toBe(
      "They talked about zebras.\n\n(Summary unavailable for the messages after this.)",
    );
    const memory = readFileSync(join(h.dirs.memory, "c1", `${memoryDate(new Date())}.md`), "utf8");
    expect(memory).toMatch(
      /\]: They talked about zebras\.\n\n\[\d{2}:\d{2}\]: Summary unavailable\.\n\n$/,
    );
  });

  it("leaves what /forget hid out of the summary, and an earlier summary it hid", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    const chat = "8303:1";
    await talk(chat, ["my test at the Lupa clinic came back", "q2"]);
    h.fake.scriptFor(SUMMARY_MODEL, text("They talked about the Lupa clinic."));
    expect((await h.app.compactor.compact(chat)).status).toBe("compacted");
    await talk(chat, ["the clinic called again", "q4"]);
    const asked = await h.app.forgetting.ask("private-8303", "clinic");
    await h.app.forgetting.confirm("private-8303", asked.requestId as number);
    h.fake.scriptFor(SUMMARY_MODEL, text("They talked about q2."));
    expect((await h.app.compactor.compact(chat)).status).toBe("compacted");
    const sent = body(summaryRequests(h)[1]);
    expect(sent).not.toContain("clinic");
    expect(sent).toContain("q2");
  });

  it("compacts when Gemini finds the request too long for the model, and asks again", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    await talk("c1", ["an earlier question", "another"]);
    h.fake.scriptFor(CHAT_MODEL, status(400, TOO_LONG), text("4"));
    h.fake.scriptFor(SUMMARY_MODEL, text("They asked two questions."));
    const result = await h.app.agent.runTurn("c1", { text: "what is 2+2?" });
    expect(result.text).toBe("4");
    expect(summaryRequests(h)).toHaveLength(1);
    const last = chatRequests(h).at(-1);
    expect(body(last)).toContain("what is 2+2?");
    expect(body(last)).toContain("They asked two questions.");
  });

  it("sets aside a message too long for the model on its own, once compacting did not do", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    h.fake.scriptFor(CHAT_MODEL, status(400, TOO_LONG), status(400, TOO_LONG));
    const failed = await h.app.agent
      .runTurn("c1", { text: "a file of megabytes" })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(GeminiRefusedError);
    expect(failed).toMatchObject({ inputRefused: true });
    expect(chatRequests(h)).toHaveLength(2);
    h.fake.scriptFor(CHAT_MODEL, text("hello"));
    expect((await h.app.agent.runTurn("c1", { text: "hi" })).text).toBe("hello");
  });

  it("keeps the message when compacting for a request too long failed: whose fault is not known", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    await talk("c1", ["an earlier question", "another"]);
    h.fake.scriptFor(CHAT_MODEL, status(400, TOO_LONG), status(400, TOO_LONG));
    h.fake.scriptFor(SUMMARY_MODEL, status(400, TOO_LONG));
    const failed = await h.app.agent
      .runTurn("c1", { text: "what is 2+2?" })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(GeminiRefusedError);
    const { events } = await h.app.store.loadContext("c1");
    expect(events.some((e) => e.event.refused)).toBe(false);
    h.fake.scriptFor(CHAT_MODEL, text("4"));
    await h.app.agent.runTurn("c1", { text: "and now?" });
    expect(body(chatRequests(h).at(-1))).toContain("what is 2+2?");
  });

  it("never sets a message aside for a 400 about Koroku's own request (a tool's schema)", async () => {
    h = await startHarness({});
    const toolSchema =
      "Invalid JSON payload received. Unknown name \"exclusiveMinimum\" at 'tools[0].function_declarations[13].parameters': Cannot find field.";
    h.fake.scriptFor(CHAT_MODEL, status(400, toolSchema));
    const failed = await h.app.agent.runTurn("c2", { text: "hello" }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ inputRefused: false });
  });

  it("compacts on demand and says when there is nothing to compact", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "30" } });
    h.fake.scriptFor(SUMMARY_MODEL, text("on demand"));
    await talk("c1", ["only"]);
    expect((await h.app.compactor.compact("c1")).status).toBe("nothing-to-compact");
    await talk("c1", ["second"]);
    const outcome = await h.app.compactor.compact("c1");
    expect(outcome).toMatchObject({ status: "compacted", summarizedEvents: 2 });
  });
});

describe("planCompaction", () => {
  let id = 0;
  const ev = (
    role: "user" | "model",
    kind: "text" | "call" | "response",
    tokens = 10,
  ): StoredSession => ({
    id: ++id,
    kind: "session",
    event: {
      v: 1,
      event_type: "session",
      role,
      parts: [
        kind === "text"
          ? { kind: "text", text: "t" }
          : kind === "call"
            ? { kind: "function_call", name: "f", args: {} }
            : { kind: "function_response", name: "f", response: {} },
      ],
    },
    createdAt: "",
    promptTokens: null,
    estimatedTokens: tokens,
    toolCalls: kind === "response" ? 1 : 0,
    updateId: null,
  });
  const turn = () => [
    ev("user", "text"),
    ev("model", "call"),
    ev("user", "response"),
    ev("model", "text"),
  ];

  it("does not compact when nothing lies before the current turn", () => {
    expect(
      planCompaction({ summary: undefined, events: turn() }, { maxEvents: 2, maxTokens: 0 }),
    ).toBeUndefined();
  });

  it("cuts only at turn starts and keeps what fits in half the budgets", () => {
    const events = [...turn(), ...turn(), ...turn()];
    const plan = planCompaction({ summary: undefined, events }, { maxEvents: 16, maxTokens: 0 });
    expect(plan?.keep).toEqual(events.slice(4));
    const byTokens = planCompaction(
      { summary: undefined, events },
      { maxEvents: 0, maxTokens: 90 },
    );
    expect(byTokens?.keep).toEqual(events.slice(8));
  });

  it("sizes the turns it keeps by the tokens Gemini measured, not only by the estimate", () => {
    // Ten turns of dense text: estimated 6,000 tokens each, measured three times as many.
    const dense = Array.from({ length: 10 }, () => [
      ev("user", "text", 3000),
      ev("model", "text", 3000),
    ]).flat();
    const last = dense.at(-1) as StoredSession;
    const events = [...dense.slice(0, -1), { ...last, promptTokens: 180_000 }];
    const plan = planCompaction(
      { summary: undefined, events },
      { maxEvents: 0, maxTokens: 150_000 },
    );
    // Half the budget is 75,000 measured tokens: four turns of 18,000 fit, not all ten.
    expect(plan?.keep).toEqual(events.slice(12));
  });

  it("keeps the current turn even when it alone is over budget", () => {
    const big = [ev("user", "text", 5000), ev("model", "text", 5000)];
    const events = [...turn(), ...big];
    const plan = planCompaction({ summary: undefined, events }, { maxEvents: 2, maxTokens: 100 });
    expect(plan?.keep).toEqual(big);
    expect(plan?.summarize).toEqual(events.slice(0, 4));
  });
});
