import { beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createGeminiClient } from "../../src/agent/gemini-client.js";
import { BUDGET_EXHAUSTED } from "../../src/agent/guardrail.js";
import { AgentHooks } from "../../src/agent/hooks.js";
import { runInOrder } from "../../src/agent/tool-batch.js";
import { createAgent } from "../../src/agent/turn.js";
import type { FunctionResponsePart, SessionEvent } from "../../src/session/events.js";
import { createToolRegistry, defineTool } from "../../src/tools/registry.js";
import { call, calls, empty, mayCallFunctions, text } from "../fakes/gemini.js";
import { type Harness, harnessPerTest } from "../helpers/harness.js";

const responsesOf = (event: SessionEvent | undefined) =>
  (event?.parts ?? []).filter((p): p is FunctionResponsePart => p.kind === "function_response");

describe("tool calls of a turn", () => {
  const harness = harnessPerTest({ env: { MAX_TOOL_CALLS_PER_TURN: "15" } });
  let h: Harness;
  beforeEach(() => {
    h = harness();
  });

  it("refuses a call the third time it comes with the same arguments, whatever their order", async () => {
    h.fake.script(
      call("get_current_time", { a: 1, b: 2 }),
      call("get_current_time", { b: 2, a: 1 }),
      call("get_current_time", { a: 1, b: 2 }),
      call("get_current_time", { a: 1, b: 3 }),
      text("done"),
    );
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    const result = await h.app.agent.runTurn("c1", { text: "loop" });
    expect(result).toMatchObject({ text: "done", toolCalls: 4, modelCalls: 5 });
    expect(executed).toBe(3);
    const { events } = await h.app.store.loadContext("c1");
    const refused = events[6];
    const [response] = responsesOf(refused?.event);
    const error = String(response?.response?.error);
    expect(error).toContain("already ran twice in this turn");
    expect(error).toContain("change approach");
    // What the second run returned, so the model need not ask again.
    const second = responsesOf(events[4]?.event)[0]?.response;
    expect(error).toContain(JSON.stringify(second).slice(0, 40));
    expect(refused?.toolCalls).toBe(1);
    // The refusal went to Gemini as the call's response, and the next call ran.
    expect(JSON.stringify(h.fake.requests[3]?.body.contents)).toContain("already ran twice");
    expect(responsesOf(events[8]?.event)[0]?.response).toHaveProperty("output");
  });

  it("refuses the third of three identical calls in one response, with the batch's own result", async () => {
    h.fake.script(
      calls([1, 2, 3].map((i) => ({ name: "list_files", args: { path: "." }, id: `c${i}` }))),
      text("done"),
    );
    await h.app.agent.runTurn("c1", { text: "ls thrice" });
    const { events } = await h.app.store.loadContext("c1");
    const responses = responsesOf(events[2]?.event).map((p) => p.response);
    expect(responses[0]).toEqual(responses[1]);
    expect(String(responses[2]?.error)).toContain(JSON.stringify(responses[0]).slice(0, 40));
    expect(events[2]?.toolCalls).toBe(3);
  });

  it("counts refused repeats toward the budget, and a new message starts a fresh count", async () => {
    h.fake.setDefault((req) =>
      mayCallFunctions(req) ? call("get_current_time") : text("budget spent"),
    );
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    const result = await h.app.agent.runTurn("c1", { text: "loop forever" });
    expect(result).toMatchObject({ text: "budget spent", toolCalls: 15, modelCalls: 16 });
    expect(executed).toBe(2);
    h.fake.setDefault(text("ok"));
    h.fake.script(call("get_current_time"), text("fresh"));
    await h.app.agent.runTurn("c1", { text: "once more" });
    expect(executed).toBe(3);
    const { events } = await h.app.store.loadContext("c1");
    expect(events.at(-2)?.event.parts[0]).not.toHaveProperty("response.error", BUDGET_EXHAUSTED);
  });

  it("ends the turn with the budget's words when Gemini, forbidden tools, answers UNEXPECTED_TOOL_CALL", async () => {
    h.fake.setDefault((req) =>
      mayCallFunctions(req)
        ? call("get_current_time", { n: Math.random() })
        : empty("UNEXPECTED_TOOL_CALL"),
    );
    const result = await h.app.agent.runTurn("c1", { text: "loop forever" });
    expect(result).toMatchObject({ toolCalls: 15, modelCalls: 16 });
    expect(result.text).toBe(
      "I stopped after 15 tool calls, my limit for one message. Tell me whether to continue.",
    );
  });

  it("runs one response's calls concurrently and answers them in call order", async () => {
    const gates = new Map<string, () => void>();
    const started: string[] = [];
    const finished: string[] = [];
    const wait = defineTool({
      name: "wait_for",
      description: "waits until the test opens its gate",
      schema: z.object({ gate: z.string() }),
      run: ({ gate }) =>
        new Promise<string>((resolve) => {
          started.push(gate);
          gates.set(gate, () => {
            finished.push(gate);
            resolve(`opened ${gate}`);
          });
        }),
    });
    const order: string[] = [];
    const serial = defineTool({
      name: "serial",
      description: "one at a time",
      schema: z.object({ n: z.number() }),
      maxConcurrent: 1,
      run: async ({ n }) => {
        order.push(`start ${n}`);
        await new Promise((resolve) => setImmediate(resolve));
        order.push(`end ${n}`);
        return n;
      },
    });
    const hooks = new AgentHooks();
    const agent = createAgent({
      store: h.app.store,
      media: h.app.media,
      saveFile: h.app.attachments.save,
      model: createGeminiClient({ apiKey: "k", baseUrl: h.fake.baseUrl, logger: h.app.logger }),
      tools: createToolRegistry([wait, serial]),
      hooks,
      logger: h.app.logger,
      settings: { model: "chat-model", maxToolCallsPerTurn: 15 },
    });
    h.fake.script(
      calls([
        { name: "wait_for", args: { gate: "a" }, id: "1" },
        { name: "serial", args: { n: 1 }, id: "2" },
        { name: "wait_for", args: { gate: "b" }, id: "3" },
        { name: "serial", args: { n: 2 }, id: "4" },
      ]),
      text("all done"),
    );
    const turn = agent.runTurn("c1", { text: "go" });
    // Both waits are running at once: a loop that ran calls one by one would never start "b".
    await vi.waitFor(() => expect(started).toEqual(["a", "b"]));
    gates.get("b")?.();
    gates.get("a")?.();
    expect((await turn).text).toBe("all done");
    expect(finished).toEqual(["b", "a"]);
    expect(order).toEqual(["start 1", "end 1", "start 2", "end 2"]);
    const { events } = await h.app.store.loadContext("c1");
    expect(responsesOf(events[2]?.event).map((p) => [p.id, p.response])).toEqual([
      ["1", { output: "opened a" }],
      ["2", { output: 1 }],
      ["3", { output: "opened b" }],
      ["4", { output: 2 }],
    ]);
  });
});

describe("runInOrder", () => {
  it("keeps results in item order and holds each key to its limit", async () => {
    let running = 0;
    let peak = 0;
    const results = await runInOrder(
      [3, 1, 2, 5, 4],
      (n) => (n % 2 === 0 ? "even" : "odd"),
      (key) => (key === "odd" ? 2 : undefined),
      async (n) => {
        running++;
        peak = Math.max(peak, running);
        for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
        running--;
        return n * 10;
      },
    );
    expect(results).toEqual([30, 10, 20, 50, 40]);
    // Two odd at a time plus both even ones.
    expect(peak).toBe(4);
  });
});
