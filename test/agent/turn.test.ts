import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { GeminiRefusedError, GeminiUnsupportedAnswerError } from "../../src/agent/gemini-errors.js";
import { BUDGET_EXHAUSTED, INTERRUPTED } from "../../src/agent/guardrail.js";
import type { SessionEvent } from "../../src/session/events.js";
import {
  call,
  calls,
  combine,
  content,
  mayCallFunctions,
  type RecordedRequest,
  status,
  text,
  thought,
} from "../fakes/gemini.js";
import { type Harness, harnessPerTest, startHarness } from "../helpers/harness.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

const responsesOf = (e: SessionEvent) => e.parts.filter((p) => p.kind === "function_response");
const allText = (r: RecordedRequest) => JSON.stringify(r.body.contents);
/** A call unlike every other one of the turn, which the repeated-call guard lets through. */
let distinct = 0;
const freshCall = () => call("get_current_time", { attempt: ++distinct });

describe("agent turn loop", () => {
  // Turns run here by code, with nobody to ask: the tools that ask are allowed.
  const harness = harnessPerTest({
    env: { MAX_TOOL_CALLS_PER_TURN: "15", ...allowBuiltinTools() },
  });
  let h: Harness;
  beforeEach(() => {
    h = harness();
  });

  it("answers a text turn with the system instruction, tools and stored events", async () => {
    h.fake.script(text("Hello **there**"));
    const result = await h.app.agent.runTurn("c1", { text: "hi" });
    expect(result).toMatchObject({
      text: "Hello **there**",
      modelCalls: 1,
      toolCalls: 0,
      resumed: false,
    });
    const [request] = h.fake.requests;
    const system = JSON.stringify(request?.body.systemInstruction);
    expect(system).toContain("Koroku");
    // The date rides on the user's message, not in the instruction every request shares.
    expect(system).not.toContain(String(new Date().getFullYear()));
    const [stamp, words] = request?.body.contents[0]?.parts ?? [];
    expect(stamp?.text).toMatch(/^\[\w+day, \d{1,2} \w+ \d{4} at \d\d:\d\d\]$/);
    expect(stamp?.text).toContain(String(new Date().getFullYear()));
    expect(words?.text).toBe("hi");
    expect(system).toContain("read_memory");
    expect(system).toContain("search_history");
    const declared = request?.body.tools?.[0]?.functionDeclarations?.map((d) => d.name);
    expect(declared).toEqual([
      "get_current_time",
      "list_files",
      "read_file",
      "write_file",
      "send_file",
      "read_memory",
      "search_history",
      "schedule_task",
      "list_tasks",
      "cancel_task",
      "remember",
      "forget",
      "generate_image",
    ]);
    const context = await h.app.store.loadContext("c1");
    expect(context.events.map((e) => e.event.role)).toEqual(["user", "model"]);
  });

  it("runs a tool call and sends its response back with the call's signature", async () => {
    h.fake.script(call("get_current_time"), text("It is late."));
    const seen: string[] = [];
    h.app.hooks.on("toolCall", (e) => seen.push(`call ${e.name}`));
    h.app.hooks.on("toolResult", (e) => seen.push(`result ${e.name} ${e.ok}`));
    h.app.hooks.on("turnEnd", (e) => seen.push(`end ${e.toolCalls}`));
    const result = await h.app.agent.runTurn("c1", { text: "time?" });
    expect(result.text).toBe("It is late.");
    expect(seen).toEqual(["call get_current_time", "result get_current_time true", "end 1"]);
    const second = h.fake.requests[1] as RecordedRequest;
    const modelTurn = second.body.contents[1];
    expect(modelTurn?.parts?.[0]?.thoughtSignature).toBe(h.fake.issued[0]?.signature);
    const response = second.body.contents[2]?.parts?.[0]?.functionResponse;
    expect(response?.name).toBe("get_current_time");
    expect(Object.keys(response?.response?.output as object)).toContain("iso");
    const events = (await h.app.store.loadContext("c1")).events;
    expect(responsesOf(events[2]?.event as SessionEvent)[0]).toMatchObject({
      call: { name: "get_current_time", args: {} },
    });
    expect(events[2]?.toolCalls).toBe(1);
  });

  it("runs a parallel batch and answers every call in one turn", async () => {
    h.fake.script(
      calls([
        { name: "write_file", args: { path: "a.txt", content: "A" }, id: "1" },
        { name: "write_file", args: { path: "b.txt", content: "B" }, id: "2" },
      ]),
      text("done"),
    );
    await h.app.agent.runTurn("c1", { text: "write two files" });
    expect(readFileSync(join(h.workspaceOf("c1"), "b.txt"), "utf8")).toBe("B");
    const events = (await h.app.store.loadContext("c1")).events;
    expect(responsesOf(events[2]?.event as SessionEvent).map((p) => p.id)).toEqual(["1", "2"]);
  });

  it("stores thought parts, sends them back, and never shows them", async () => {
    h.fake.script(combine(thought("secret plan"), text("visible answer")), text("second"));
    const first = await h.app.agent.runTurn("c1", { text: "q1" });
    expect(first.text).toBe("visible answer");
    await h.app.agent.runTurn("c1", { text: "q2" });
    expect(allText(h.fake.requests[1] as RecordedRequest)).toContain("secret plan");
    const lines = await h.app.store.lastTurns("c1", 10);
    expect(JSON.stringify(lines)).toContain("secret plan");
  });

  it("keeps signatures valid across a restart on the same database", async () => {
    h.fake.script(call("list_files"), text("listed"));
    await h.app.agent.runTurn("c1", { text: "ls" });
    const restarted = await h.restart();
    h.fake.script(text("still valid"));
    expect((await restarted.agent.runTurn("c1", { text: "again" })).text).toBe("still valid");
    expect(h.fake.requests).toHaveLength(3);
  });

  it("forbids tool calls after exactly 15 calls and says why, without storing the notice", async () => {
    h.fake.setDefault((req) =>
      mayCallFunctions(req) ? freshCall() : text("I used my budget; continue?"),
    );
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    const result = await h.app.agent.runTurn("c1", { text: "loop forever" });
    expect(executed).toBe(15);
    expect(result).toMatchObject({
      toolCalls: 15,
      modelCalls: 16,
      text: "I used my budget; continue?",
    });
    const last = h.fake.requests.at(-1) as RecordedRequest;
    expect(mayCallFunctions(last)).toBe(false);
    // Still declared: the request starts as the ones before it did (Gemini's implicit cache).
    expect(last.body.tools).toEqual(h.fake.requests[0]?.body.tools);
    expect(allText(last)).toContain("tool budget");
    const stored = JSON.stringify((await h.app.store.loadContext("c1")).events);
    expect(stored).not.toContain("tool budget");
    // A new user message gives a fresh budget.
    h.fake.setDefault(text("ok"));
    h.fake.script(call("get_current_time"), text("ok"));
    await h.app.agent.runTurn("c1", { text: "one more" });
    expect(mayCallFunctions(h.fake.requests.at(-2) as RecordedRequest)).toBe(true);
  });

  it("runs only what fits of a parallel batch that crosses the limit", async () => {
    let n = 0;
    h.fake.setDefault((req) => {
      if (!mayCallFunctions(req)) return text("stopped");
      n++;
      return n < 15
        ? freshCall()
        : calls([0, 1, 2].map((i) => ({ name: "get_current_time", args: { i }, id: `b${i}` })));
    });
    let executed = 0;
    h.app.hooks.on("toolCall", () => executed++);
    await h.app.agent.runTurn("c1", { text: "go" });
    expect(executed).toBe(15);
    const events = (await h.app.store.loadContext("c1")).events;
    const batch = responsesOf(events.at(-2)?.event as SessionEvent);
    expect(batch.map((p) => p.response)).toEqual([
      expect.objectContaining({ output: expect.anything() }),
      { error: BUDGET_EXHAUSTED },
      { error: BUDGET_EXHAUSTED },
    ]);
    expect(events.at(-2)?.toolCalls).toBe(1);
  });

  it("keeps the budget across a restart in the middle of a turn", async () => {
    let answered = 0;
    h.fake.setDefault((req) => {
      if (!mayCallFunctions(req)) return text("budget spent");
      answered++;
      // Not a 400: Gemini refusing the input would set the message aside for good.
      return answered <= 10 ? freshCall() : status(404, "boom: simulated crash point");
    });
    await expect(
      h.app.agent.runTurn("c1", { text: "long job", updateId: 7 }),
    ).rejects.toBeInstanceOf(GeminiRefusedError);
    const restarted = await h.restart();
    h.fake.setDefault((req) => (mayCallFunctions(req) ? freshCall() : text("budget spent")));
    let executed = 0;
    restarted.hooks.on("toolCall", () => executed++);
    const result = await restarted.agent.runTurn("c1", { text: "long job", updateId: 7 });
    expect(executed).toBe(5);
    expect(result.text).toBe("budget spent");
    const events = (await restarted.store.loadContext("c1")).events;
    expect(
      events.filter((e) => e.event.role === "user" && e.event.parts[0]?.kind === "text"),
    ).toHaveLength(1);
  });

  it("retries a 503 and succeeds", async () => {
    h.fake.script(status(503), text("after retry"));
    expect((await h.app.agent.runTurn("c1", { text: "hi" })).text).toBe("after retry");
    expect(h.fake.requests).toHaveLength(2);
  });

  it("ends the turn on a permanent 400 with a message for the user, and the chat keeps working", async () => {
    h.fake.script(status(400, "Request contains an invalid argument."));
    const error = await h.app.agent.runTurn("c1", { text: "hi" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GeminiRefusedError);
    expect((error as GeminiRefusedError).userMessage).toMatch(/^Gemini refused the request/);
    expect(h.fake.requests).toHaveLength(1);
    h.fake.script(text("fine now"));
    expect((await h.app.agent.runTurn("c1", { text: "again" })).text).toBe("fine now");
  });

  it("tells the user at once about an answer it cannot store, without asking Gemini again", async () => {
    h.fake.script(
      content({
        role: "model",
        parts: [{ fileData: { fileUri: "https://example.com/v.mp4", mimeType: "video/mp4" } }],
      }),
      text("fine now"),
    );
    const error = await h.app.agent.runTurn("c1", { text: "draw" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GeminiUnsupportedAnswerError);
    expect((error as GeminiUnsupportedAnswerError).userMessage).toMatch(
      /cannot handle yet \(a part holding "fileData"\)/,
    );
    expect((error as Error).message).toMatch(/fileData/);
    expect(h.fake.requests).toHaveLength(1);
    expect((await h.app.agent.runTurn("c1", { text: "again" })).text).toBe("fine now");
  });

  it("stores no token measurement when Gemini sent no prompt token count", async () => {
    h.fake.script(
      { ...text("a"), usage: { promptTokenCount: 123 } },
      {
        ...text("b"),
        usage: { promptTokenCount: 0 },
      },
    );
    await h.app.agent.runTurn("c1", { text: "one" });
    await h.app.agent.runTurn("c1", { text: "two" });
    const { events } = await h.app.store.loadContext("c1");
    expect(events.map((e) => e.promptTokens)).toEqual([null, 123, null, null]);
  });

  it("bills what Gemini's own tools read as input, without counting it in the context's size", async () => {
    h.fake.script({
      ...text("the page says hi"),
      usage: { promptTokenCount: 100, candidatesTokenCount: 10, toolUsePromptTokenCount: 20_000 },
    });
    await h.app.agent.runTurn("c1", { text: "read example.com" });
    const { events } = await h.app.store.loadContext("c1");
    expect(events.map((e) => e.promptTokens)).toEqual([null, 100]);
    await h.app.usageRecorder.flush();
    const [row] = await h.app.usage.since("c1", new Date(0));
    expect(row?.usage).toMatchObject({ promptTokens: 20_100, outputTokens: 10 });
  });

  it("turns tool failures into error responses and goes on", async () => {
    h.fake.script(
      calls([
        { name: "no_such_tool", id: "1" },
        { name: "read_file", args: { path: 42 }, id: "2" },
        { name: "read_file", args: { path: "../../etc/passwd" }, id: "3" },
        { name: "read_file", args: { path: "/etc/passwd" }, id: "4" },
      ]),
      text("sorry"),
    );
    const results: boolean[] = [];
    h.app.hooks.on("toolResult", (e) => results.push(e.ok));
    expect((await h.app.agent.runTurn("c1", { text: "try" })).text).toBe("sorry");
    expect(results).toEqual([false, false, false, false]);
    const events = (await h.app.store.loadContext("c1")).events;
    const errors = responsesOf(events[2]?.event as SessionEvent).map((p) =>
      String(p.response?.error),
    );
    expect(errors[0]).toContain("unknown tool");
    expect(errors[1]).toContain("path");
    expect(errors[2]).toMatch(/outside|workspace/i);
    expect(errors[3]).toMatch(/absolute|workspace/i);
  });

  it("completes function calls left dangling by a crash before the next model call", async () => {
    await h.app.store.append("c1", [
      {
        event: {
          v: 1,
          event_type: "session",
          role: "user",
          parts: [{ kind: "text", text: "do it" }],
        },
      },
      {
        event: {
          v: 1,
          event_type: "session",
          role: "model",
          parts: [
            {
              kind: "function_call",
              name: "get_current_time",
              args: {},
              thoughtSignature: "skip_thought_signature_validator",
            },
          ],
        },
      },
    ]);
    h.fake.script(text("recovered"));
    expect((await h.app.agent.runTurn("c1", { text: "hello?" })).text).toBe("recovered");
    expect(allText(h.fake.requests[0] as RecordedRequest)).toContain(INTERRUPTED);
  });

  it("does not store a resumed update's message twice and reuses a stored answer", async () => {
    h.fake.script(text("first answer"));
    await h.app.agent.runTurn("c1", { text: "question", updateId: 99 });
    const again = await h.app.agent.runTurn("c1", { text: "question", updateId: 99 });
    expect(again).toMatchObject({ text: "first answer", resumed: true, modelCalls: 0 });
    expect(h.fake.requests).toHaveLength(1);
    expect((await h.app.store.loadContext("c1")).events).toHaveLength(2);
  });

  it("checks its guard before every model call and write, and stops at the first refusal", async () => {
    h.fake.script(call("get_current_time"), text("never stored"));
    const refusal = new Error("lease lost");
    let checks = 0;
    const guard = async () => {
      // Store the user event, call the model, store its call; but not the tool's response.
      if (++checks > 3) throw refusal;
    };
    await expect(h.app.agent.runTurn("c1", { text: "time?", guard })).rejects.toBe(refusal);
    expect(checks).toBe(4);
    const events = (await h.app.store.loadContext("c1")).events;
    expect(events.map((e) => e.event.role)).toEqual(["user", "model"]);
    expect(h.fake.requests).toHaveLength(1);
  });
});

describe("agent settings", () => {
  it("asks with GEMINI_THINKING_LEVEL's thinking config", async () => {
    const h = await startHarness({ env: { GEMINI_THINKING_LEVEL: "low" } });
    try {
      await h.app.agent.runTurn("c1", { text: "hi" });
      expect(h.fake.requests[0]?.body.generationConfig?.thinkingConfig).toEqual({
        thinkingLevel: "LOW",
      });
      expect(h.fake.rejections).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
