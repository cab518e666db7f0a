import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Content } from "@google/genai";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { STREAM_CUT_NOTE } from "../../src/agent/finish-reasons.js";
import { createGeminiClient } from "../../src/agent/gemini-client.js";
import { GeminiUnavailableError } from "../../src/agent/gemini-errors.js";
import type { ModelClient } from "../../src/agent/model-client.js";
import { STOPPED_CALL, type TurnProgress } from "../../src/agent/turn.js";
import { historyLines, historyLineText } from "../../src/session/history-view.js";
import {
  calls,
  combine,
  content,
  type FakeGemini,
  startFakeGemini,
  status,
  streamed,
  text,
  thought,
} from "../fakes/gemini.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { type Harness, startHarness } from "../helpers/harness.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

const MODEL = "gemini-test";
const ask = (value: string): Content => ({ role: "user", parts: [{ text: value }] });
// Base64, as Gemini's signatures are.
const SIG_TEXT = "c2lnbmVkLXRleHQ=";
const SIG_CALL = "c2lnbmVkLWNhbGw=";
const SIG_FINAL = "c2lnbmVkLWZpbmFs";
const ANSWER = "The *answer*, written in pieces: ".repeat(6);

/** A thinking model's tool round, then its signed answer: what Gemini 3 sends. */
const toolRound = () =>
  combine(
    thought("Planning: the user wants a file."),
    content({
      parts: [
        { text: "I will write it.", thoughtSignature: SIG_TEXT },
        {
          functionCall: { name: "write_file", args: { path: "a.txt", content: "A" }, id: "c-1" },
          thoughtSignature: SIG_CALL,
        },
      ],
    }),
  );
const finalAnswer = () =>
  combine(
    thought("It worked."),
    content({ parts: [{ text: ANSWER, thoughtSignature: SIG_FINAL }] }),
  );

describe("streamed model calls", () => {
  let fake: FakeGemini;
  let client: ModelClient;
  const logger = pino({ level: "silent" });

  beforeEach(async () => {
    fake = await startFakeGemini({ stream: { chunkChars: 7 } });
    client = createGeminiClient({
      apiKey: "k",
      baseUrl: fake.baseUrl,
      logger,
      retry: { baseMs: 1, maxMs: 2 },
    });
  });
  afterEach(async () => {
    expect(fake.rejections).toEqual([]);
    await fake.close();
  });

  it("assembles chunks into the answer a non-streamed call returns", async () => {
    fake.script(finalAnswer(), finalAnswer(), toolRound(), toolRound());
    const seen: string[] = [];
    const stream = { onText: (t: string) => seen.push(t), onRestart: () => seen.push("restart") };
    const plain = await client.generate({ model: MODEL, contents: [ask("q")] });
    const live = await client.generate({ model: MODEL, contents: [ask("q")], stream });
    expect(live).toEqual(plain);
    expect(live.content.parts).toEqual([
      { text: "It worked.", thought: true },
      { text: ANSWER, thoughtSignature: SIG_FINAL },
    ]);
    expect(live.finishReason).toBe("STOP");
    // Thoughts never shown; the answer grows piece by piece.
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.at(-1)).toBe(ANSWER);
    expect(seen.every((t) => ANSWER.startsWith(t))).toBe(true);

    const plainCalls = await client.generate({ model: MODEL, contents: [ask("q")] });
    const liveCalls = await client.generate({ model: MODEL, contents: [ask("q")], stream });
    expect(liveCalls).toEqual(plainCalls);
    expect(liveCalls.content.parts?.[2]).toEqual({
      functionCall: { name: "write_file", args: { path: "a.txt", content: "A" }, id: "c-1" },
      thoughtSignature: SIG_CALL,
    });
    expect(fake.requests.map((r) => r.stream)).toEqual([false, true, false, true]);
  });

  it("starts over when the stream breaks in the middle, and retries a refused start", async () => {
    fake.script(status(503), streamed(text(ANSWER), { breakAfter: 3 }), text(ANSWER));
    const seen: string[] = [];
    const result = await client.generate({
      model: MODEL,
      contents: [ask("q")],
      stream: { onText: (t) => seen.push(t), onRestart: () => seen.push("restart") },
    });
    expect(result.content.parts).toEqual([{ text: ANSWER }]);
    expect(fake.requests).toHaveLength(3);
    const restart = seen.indexOf("restart");
    expect(seen.slice(0, restart)).toEqual([
      ANSWER.slice(0, 7),
      ANSWER.slice(0, 14),
      ANSWER.slice(0, 21),
    ]);
    expect(seen[restart + 1]).toBe(ANSWER.slice(0, 7));
    // Up to the chunk that ends the answer, which is not drafted (the answer follows at once).
    expect(seen.at(-1)).toBe(ANSWER.slice(0, Math.floor((ANSWER.length - 1) / 7) * 7));
  });

  it("drafts nothing of the chunk that ends the turn's answer, but drafts text before a function call", async () => {
    fake.script(
      streamed(text(ANSWER), { chunkChars: ANSWER.length }),
      streamed(toolRound(), { chunkChars: 1_000 }),
    );
    const seen: string[] = [];
    const stream = { onText: (t: string) => seen.push(t), onRestart: () => seen.push("restart") };
    const whole = await client.generate({ model: MODEL, contents: [ask("q")], stream });
    expect(whole.content.parts).toEqual([{ text: ANSWER }]);
    expect(seen).toEqual([]);
    const round = await client.generate({ model: MODEL, contents: [ask("q")], stream });
    expect(round.content.parts?.at(-1)?.functionCall?.name).toBe("write_file");
    expect(seen).toEqual(["I will write it."]);
  });

  it("returns what was written when stopped, and retries nothing", async () => {
    fake.script(streamed(combine(thought("hmm"), text(ANSWER)), { chunkDelayMs: 30 }));
    const stop = new AbortController();
    const result = await client.generate({
      model: MODEL,
      contents: [ask("q")],
      stop: stop.signal,
      stream: {
        onText: (t) => {
          if (t.length >= 14) stop.abort();
        },
        onRestart: () => {
          throw new Error("a stopped answer must not start over");
        },
      },
    });
    expect(result.stopped).toBe(true);
    expect(result.content.parts).toEqual([{ text: ANSWER.slice(0, 14) }]);
    expect(fake.requests).toHaveLength(1);
  });
});

/** A progress that records what it is told; the first tool to start stops the answer. */
function recordingProgress() {
  const stopper = new AbortController();
  const seen: string[] = [];
  const progress: TurnProgress = {
    text: (t) => seen.push(`text ${t}`),
    restart: () => seen.push("restart"),
    tool: (name, args) => {
      seen.push(`tool ${name} ${args.path}`);
      stopper.abort();
    },
  };
  return { stop: stopper.signal, seen, progress };
}

describe("a streamed turn against the fake", () => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    for (const h of harnesses.splice(0)) {
      expect(h.fake.rejections).toEqual([]);
      await h.close();
    }
  });

  const start = async (wrapModel?: (model: ModelClient) => ModelClient) => {
    const h = await startHarness({
      // Turns run here by code, with nobody to ask: the tools that ask are allowed.
      env: allowBuiltinTools(),
      gemini: { stream: { chunkChars: 5 } },
      ...(wrapModel ? { wrapModel } : {}),
    });
    harnesses.push(h);
    return h;
  };

  it("stores the same history as a non-streamed one, thoughts and signatures included", async () => {
    const live = await start();
    const plain = await start((model) => ({
      generate: ({ stream: _stream, ...request }) => model.generate(request),
    }));
    for (const h of [live, plain]) {
      h.fake.script(toolRound(), finalAnswer());
      const result = await h.app.agent.runTurn("c1", { text: "write a.txt" });
      expect(result.text).toBe(ANSWER);
    }
    expect(live.fake.requests.map((r) => r.stream)).toEqual([true, true]);
    expect(plain.fake.requests.map((r) => r.stream)).toEqual([false, false]);
    const events = async (h: Harness) =>
      (await h.app.store.loadContext("c1")).events.map((e) => e.event);
    const liveEvents = await events(live);
    expect(liveEvents).toEqual(await events(plain));
    expect(liveEvents.map((e) => e.role)).toEqual(["user", "model", "user", "model"]);
    expect(live.fake.requests[1]?.body.contents).toEqual(plain.fake.requests[1]?.body.contents);
  });

  it("tells the progress what is written and which tool runs; stop ends before the next call", async () => {
    const h = await start();
    h.fake.script(toolRound());
    const { stop, seen, progress } = recordingProgress();
    const result = await h.app.agent.runTurn("c1", { text: "write a.txt", stop, progress });
    expect(seen.at(-2)).toBe("text I will write it.");
    expect(seen.at(-1)).toBe("tool write_file a.txt");
    expect(result).toMatchObject({ text: "(stopped)", stopped: true, modelCalls: 1 });
    expect(h.fake.requests).toHaveLength(1);
    const stored = (await h.app.store.loadContext("c1")).events.map((e) => e.event);
    expect(stored.at(-1)).toEqual({
      v: 1,
      event_type: "session",
      role: "model",
      parts: [{ kind: "text", text: "(stopped)" }],
      stopped: true,
    });
    expect(JSON.stringify(stored)).not.toContain(STOPPED_CALL);
    // The next message continues from a history Gemini accepts.
    h.fake.script(text("continuing"));
    expect((await h.app.agent.runTurn("c1", { text: "go on" })).text).toBe("continuing");
  });

  it("a stop while a batch of calls runs: the calls not started yet are answered, never run", async () => {
    const h = await start();
    // One write at a time (write_file's limit), so the second waits for the first.
    h.fake.script(
      calls([
        { name: "write_file", args: { path: "a.txt", content: "A" }, id: "c-1" },
        { name: "write_file", args: { path: "b.txt", content: "B" }, id: "c-2" },
      ]),
    );
    const { stop, seen, progress } = recordingProgress();
    const result = await h.app.agent.runTurn("c1", { text: "write both", stop, progress });
    expect(seen.filter((t) => t.startsWith("tool"))).toEqual(["tool write_file a.txt"]);
    expect(result).toMatchObject({ stopped: true, modelCalls: 1 });
    expect(existsSync(join(h.workspaceOf("c1"), "a.txt"))).toBe(true);
    expect(existsSync(join(h.workspaceOf("c1"), "b.txt"))).toBe(false);

    // The next message's history pairs both calls with a response (the fake checks it).
    h.fake.script(text("continuing"));
    expect((await h.app.agent.runTurn("c1", { text: "go on" })).text).toBe("continuing");
    const responses = (h.fake.requests[1]?.body.contents ?? [])
      .flatMap((c) => c.parts ?? [])
      .flatMap((p) => (p.functionResponse ? [p.functionResponse] : []));
    expect(responses.map((r) => r.id)).toEqual(["c-1", "c-2"]);
    expect(JSON.stringify(responses[0]?.response)).not.toContain(STOPPED_CALL);
    expect(responses[1]?.response).toEqual({ error: STOPPED_CALL });
  });

  it("a stream that breaks mid-way until the retries run out fails the turn, and stores none of it", async () => {
    const h = await start();
    const broken = () => streamed(text(ANSWER), { breakAfter: 3 });
    h.fake.script(broken(), broken(), broken(), broken(), broken());
    const { seen, progress } = recordingProgress();
    await expect(h.app.agent.runTurn("c1", { text: "q", progress })).rejects.toThrow(
      GeminiUnavailableError,
    );
    expect(h.fake.requests).toHaveLength(5);
    // Every attempt showed the start of the answer, and each but the last started it over.
    const partial = `text ${ANSWER.slice(0, 15)}`;
    expect(seen.filter((t) => t === partial)).toHaveLength(5);
    expect(seen.filter((t) => t === "restart")).toHaveLength(4);
    const stored = (await h.app.store.loadContext("c1")).events.map((e) => e.event);
    expect(stored.map((e) => e.role)).toEqual(["user"]);
    expect(JSON.stringify(stored)).not.toContain(ANSWER.slice(0, 5));
  });
});

describe.each(DATABASE_KINDS)("a stream cut short or garbled, on %s", (kind) => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    for (const h of harnesses.splice(0)) {
      expect(h.fake.rejections).toEqual([]);
      await h.close();
    }
  });
  const start = async () => {
    const h = await startHarness({ kind, gemini: { stream: { chunkChars: 5 } } });
    harnesses.push(h);
    return h;
  };
  const modelEvents = async (h: Harness) =>
    (await h.app.store.loadContext("c1")).events
      .map((e) => e.event)
      .filter((e) => e.event_type === "session" && e.role === "model");

  it("an answer whose stream ends without a finish reason says it was cut, and is stored as cut", async () => {
    const h = await start();
    h.fake.script(streamed(text(ANSWER), { endAfter: 2 }));
    const result = await h.app.agent.runTurn("c1", { text: "q" });
    const arrived = ANSWER.slice(0, 10);
    expect(result.text).toBe(`${arrived}\n\n${STREAM_CUT_NOTE}`);
    expect(h.fake.requests).toHaveLength(1);
    expect(await modelEvents(h)).toEqual([
      {
        v: 1,
        event_type: "session",
        role: "model",
        parts: [{ kind: "text", text: arrived }],
        cut: true,
      },
    ]);
    const replay = historyLines(await h.app.store.lastTurns("c1", 10)).map(historyLineText);
    expect(replay).toEqual(["You: q", `Koroku: ${arrived} (cut off)`]);
    expect(
      h.logs.some((l) => l.msg.startsWith("Gemini's stream ended without a finish reason")),
    ).toBe(true);
    // The next message continues from a history Gemini accepts.
    h.fake.script(text("the rest"));
    expect((await h.app.agent.runTurn("c1", { text: "go on" })).text).toBe("the rest");
  });

  it("a garbled event is asked again; the parser's words go to the log, never to the user", async () => {
    const h = await start();
    const garbled = () => streamed(text(ANSWER), { garbageAfter: 2 });
    h.fake.script(garbled(), text("a readable answer"));
    expect((await h.app.agent.runTurn("c1", { text: "q" })).text).toBe("a readable answer");
    const retried = h.logs.find((l) => l.msg === "Gemini call failed; retrying");
    expect(String(retried?.reason)).toMatch(
      /^Gemini's answer could not be read: Expected property name/,
    );

    h.fake.setDefault(garbled());
    const error = await h.app.agent.runTurn("c1", { text: "again" }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(GeminiUnavailableError);
    expect((error as GeminiUnavailableError).userMessage).toBe(
      "Gemini is unavailable (its answer came garbled), try again in a minute.",
    );
    expect((await modelEvents(h)).map((e) => JSON.stringify(e))).toEqual([
      expect.stringContaining("a readable answer"),
    ]);
  });

  it("an error event inside the stream is read as Gemini's error: its words, its retry delay", async () => {
    const h = await start();
    const event = (code: number, status: string, message: string, details?: unknown[]) =>
      streamed(text(ANSWER), {
        errorAfter: { chunks: 2, code, status, message, ...(details ? { details } : {}) },
      });
    h.fake.script(event(400, "INVALID_ARGUMENT", "Request contains an invalid argument."));
    const refused = await h.app.agent.runTurn("c1", { text: "q" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ reason: "Request contains an invalid argument." });
    const retryInfo = { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "0.2s" };
    h.fake.script(
      event(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [retryInfo]),
      text("after the wait"),
    );
    expect((await h.app.agent.runTurn("c1", { text: "again" })).text).toBe("after the wait");
    const limited = h.logs.find((l) => String(l.reason).includes("exceeded your current quota"));
    expect(limited?.reason).toBe("You exceeded your current quota.");
  });
});
