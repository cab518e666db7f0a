import { describe, expect, it } from "vitest";
import { historyLines, historyLineText } from "../../src/session/history-view.js";
import {
  call,
  codeRun,
  combine,
  type RecordedRequest,
  type ReplyStep,
  serverTool,
  text,
} from "../fakes/gemini.js";
import { type Harness, startHarness } from "../helpers/harness.js";

const search = (id: string, query: string) =>
  serverTool("GOOGLE_SEARCH_WEB", { queries: [query] }, { results: [`about ${query}`] }, id);
const grounded = (step: ReplyStep, chunks: { uri: string; title: string }[]): ReplyStep => ({
  ...step,
  grounding: {
    webSearchQueries: ["weather"],
    groundingChunks: chunks.map((web) => ({ web })),
    groundingSupports: [{ segment: { startIndex: 0, endIndex: 5 }, groundingChunkIndices: [0] }],
  },
});

async function withHarness(env: Record<string, string>, test: (h: Harness) => Promise<void>) {
  const h = await startHarness({ env });
  try {
    await test(h);
    expect(h.fake.rejections).toEqual([]);
  } finally {
    await h.close();
  }
}

const history = async (h: Harness) =>
  historyLines(await h.app.store.lastTurns("c1", 10)).map(historyLineText);

describe("Gemini's server-side tools", () => {
  it("offers google_search and url_context beside Koroku's functions, with the combination flag", () =>
    withHarness({}, async (h) => {
      await h.app.agent.runTurn("c1", { text: "hi" });
      const body = (h.fake.requests[0] as RecordedRequest).body;
      expect(body.tools).toHaveLength(1);
      expect(body.tools?.[0]).toMatchObject({ googleSearch: {}, urlContext: {} });
      expect(body.tools?.[0]?.functionDeclarations?.length).toBeGreaterThan(0);
      expect(body.tools?.[0]).not.toHaveProperty("codeExecution");
      expect(body.toolConfig).toEqual({ includeServerSideToolInvocations: true });
    }));

  it.each([
    ["GEMINI_BUILTIN_TOOLS is empty", { GEMINI_BUILTIN_TOOLS: "" }],
    ["the model is a Gemini 2.5", { GEMINI_MODEL: "gemini-2.5-flash" }],
  ])("offers only Koroku's functions when %s", (_, env) =>
    withHarness(env, async (h) => {
      await h.app.agent.runTurn("c1", { text: "hi" });
      const body = (h.fake.requests[0] as RecordedRequest).body;
      expect(Object.keys(body.tools?.[0] ?? {})).toEqual(["functionDeclarations"]);
      expect(body.toolConfig).toBeUndefined();
    }),
  );

  it("shows a grounded answer's sources once each, and the next turn's function call is valid", () =>
    withHarness({}, async (h) => {
      const answer = grounded(combine(search("s1", "weather"), text("Sunny today.")), [
        { uri: "https://a.example/w", title: "Weather A" },
        { uri: "https://a.example/w", title: "Weather A" },
        { uri: "https://b.example/(x)", title: "B [site]" },
      ]);
      h.fake.script(answer, call("get_current_time"), text("It is noon."));
      const first = await h.app.agent.runTurn("c1", { text: "weather?" });
      expect(first.text).toBe(
        "Sunny today.\n\nSources:\n- [Weather A](https://a.example/w)\n- [B \\[site\\]](https://b.example/%28x%29)",
      );
      expect(first).toMatchObject({ toolCalls: 0, serverToolCalls: 1 });

      const second = await h.app.agent.runTurn("c1", { text: "and the time?" });
      expect(second.text).toBe("It is noon.");
      // The search's parts went back exactly as Gemini sent them, signature included; the
      // grounding metadata did not (it is no part).
      const sent = (h.fake.requests[1] as RecordedRequest).body.contents[1];
      const issued = answer.parts;
      expect(
        sent?.parts?.map((p) => Object.keys(p).filter((k) => k !== "thoughtSignature")),
      ).toEqual([["toolCall"], ["toolResponse"], ["text"]]);
      expect(sent?.parts?.[0]?.thoughtSignature).toMatch(/./);
      expect(sent?.parts?.slice(0, 2).map((p) => ({ ...p, thoughtSignature: undefined }))).toEqual(
        issued.slice(0, 2).map((p) => ({ ...p, thoughtSignature: undefined })),
      );
      expect(JSON.stringify(h.fake.requests[2]?.body.contents)).not.toContain("groundingChunks");
      expect(await history(h)).toContain('✓ google_search {"queries":["weather"]}');
    }));

  it("runs a search and a function call from one response, counting only the function call", () =>
    withHarness({ MAX_TOOL_CALLS_PER_TURN: "1" }, async (h) => {
      h.fake.script(
        combine(search("s1", "news"), search("s2", "more news"), call("get_current_time")),
        text("Here is the news at noon."),
      );
      const result = await h.app.agent.runTurn("c1", { text: "news and time" });
      expect(result).toMatchObject({
        toolCalls: 1,
        serverToolCalls: 2,
        text: "Here is the news at noon.",
      });
      const { events } = await h.app.store.loadContext("c1");
      expect(events.map((e) => e.toolCalls)).toEqual([0, 0, 1, 0]);
    }));

  it("round-trips code execution parts and shows the run in /history", () =>
    withHarness({ GEMINI_BUILTIN_TOOLS: "code_execution" }, async (h) => {
      h.fake.script(combine(codeRun("print(2 + 2)", "4\n", "e1"), text("It is 4.")), text("yes"));
      const result = await h.app.agent.runTurn("c1", { text: "2+2?" });
      expect(result).toMatchObject({ text: "It is 4.", serverToolCalls: 1 });
      expect(h.fake.requests[0]?.body.tools?.[0]).toMatchObject({ codeExecution: {} });
      await h.app.agent.runTurn("c1", { text: "sure?" });
      expect(h.fake.requests[1]?.body.contents[1]?.parts?.slice(0, 2)).toEqual([
        { executableCode: { code: "print(2 + 2)", language: "PYTHON", id: "e1" } },
        { codeExecutionResult: { outcome: "OUTCOME_OK", output: "4\n", id: "e1" } },
      ]);
      expect(await history(h)).toContain('✓ code_execution {"code":"print(2 + 2)"}');
    }));

  it("answers with what the code printed when the model ran code and said nothing", () =>
    withHarness({ GEMINI_BUILTIN_TOOLS: "code_execution" }, async (h) => {
      h.fake.script(codeRun("print(6 * 7)", "42\n", "e1"));
      const result = await h.app.agent.runTurn("c1", { text: "6*7?" });
      expect(result).toMatchObject({ text: "```\n42\n```", serverToolCalls: 1 });
      h.fake.script(codeRun("print(fence)", "a ``` b\n", "e2"));
      const fenced = await h.app.agent.runTurn("c1", { text: "print a fence" });
      expect(fenced.text).toBe("````\na ``` b\n````");
    }));
});
