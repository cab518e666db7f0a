import { createHook } from "node:async_hooks";
import type { Content } from "@google/genai";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  createGeminiClient,
  type GeminiClientDeps,
  SKIP_THOUGHT_SIGNATURE,
} from "../../src/agent/gemini-client.js";
import {
  GeminiError,
  GeminiRefusedError,
  GeminiUnavailableError,
} from "../../src/agent/gemini-errors.js";
import {
  blockedPrompt,
  call,
  empty,
  type FakeGemini,
  hang,
  startFakeGemini,
  status,
  streamed,
  text,
} from "../fakes/gemini.js";
import { refusingPort } from "../helpers/refusing-port.js";

const KEY = "AIzaSy-test-secret-key-123";
const MODEL = "gemini-test";
const ask = (value: string): Content => ({ role: "user", parts: [{ text: value }] });
const timeCall = (thoughtSignature?: string): Content => ({
  role: "model",
  parts: [{ functionCall: { name: "get_current_time", args: {} }, thoughtSignature }],
});
const timeAnswer: Content = {
  role: "user",
  parts: [{ functionResponse: { name: "get_current_time", response: { output: "noon" } } }],
};

const failureOf = async (promise: Promise<unknown>): Promise<GeminiError> => {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof GeminiError))
    throw new Error(`expected a GeminiError, got ${String(error)}`);
  return error;
};

describe("createGeminiClient against the fake Gemini", () => {
  let fake: FakeGemini;

  beforeEach(async () => {
    fake = await startFakeGemini({ apiKey: KEY });
  });
  afterEach(() => fake.close());

  function setup(overrides: Partial<GeminiClientDeps> = {}) {
    const sleeps: number[] = [];
    const logLines: string[] = [];
    const logger = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
    const client = createGeminiClient({
      apiKey: KEY,
      baseUrl: fake.baseUrl,
      logger,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      ...overrides,
    });
    return { client, sleeps, logLines };
  }

  it("returns the model's text with its usage and passes instructions and tools", async () => {
    fake.script({
      ...text("hello"),
      usage: { promptTokenCount: 12, candidatesTokenCount: 3, thoughtsTokenCount: 5 },
    });
    const { client } = setup();
    const tools = [{ name: "get_current_time", description: "ISO time" }];
    const result = await client.generate({
      model: MODEL,
      systemInstruction: "be brief",
      contents: [ask("hi")],
      tools,
    });
    expect(result).toEqual({
      content: { role: "model", parts: [{ text: "hello" }] },
      usage: {
        promptTokens: 12,
        cachedTokens: 0,
        outputTokens: 8,
        thoughtsTokens: 5,
        toolUseTokens: 0,
      },
      finishReason: "STOP",
    });
    expect(fake.requests[0]?.body).toMatchObject({
      systemInstruction: { parts: [{ text: "be brief" }] },
      tools: [{ functionDeclarations: tools }],
    });

    const contents = [ask("again")];
    const plain = await client.generate({ model: MODEL, contents, tools: [] });
    expect(plain.usage.promptTokens).toBe(Math.ceil(JSON.stringify(contents).length / 4));
    expect(fake.requests[1]?.body.tools).toBeUndefined();
    expect(fake.requests[1]?.body.systemInstruction).toBeUndefined();
    expect(fake.rejections).toEqual([]);
  });

  it("sends a request of megabytes whole: inline bytes, and emoji across its chunks", async () => {
    fake.script(text("seen"));
    const { client } = setup();
    const photo = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < photo.length; i++) photo[i] = (i * 7919) % 256;
    // 300,000 UTF-16 units: the 64 Ki-unit chunk ends fall on every position of "a😺",
    // the middle of its surrogate pair included.
    const words = "a😺".repeat(100_000);
    const contents: Content[] = [
      {
        role: "user",
        parts: [
          { inlineData: { mimeType: "image/png", data: photo.toString("base64") } },
          { text: words },
        ],
      },
    ];
    const result = await client.generate({ model: MODEL, contents });
    expect(result.content.parts).toEqual([{ text: "seen" }]);
    const [sent] = fake.requests[0]?.body.contents ?? [];
    expect(Buffer.from(sent?.parts?.[0]?.inlineData?.data ?? "", "base64").equals(photo)).toBe(
      true,
    );
    expect(sent?.parts?.[1]?.text).toBe(words);
    expect(fake.rejections).toEqual([]);
  });

  it("keeps thought signatures so a call and its response round-trip", async () => {
    fake.script(call("get_current_time"), text("It is noon"));
    const { client } = setup();
    const first = await client.generate({ model: MODEL, contents: [ask("time?")] });
    const contents = [ask("time?"), first.content, timeAnswer];
    const second = await client.generate({ model: MODEL, contents });
    expect(second.content.parts).toEqual([{ text: "It is noon" }]);
    expect(fake.rejections).toEqual([]);
  });

  it.each([
    ["gemini-3.6-flash", "minimal", { thinkingLevel: "MINIMAL" }],
    ["gemini-3.5-flash-lite", "minimal", { thinkingLevel: "MINIMAL" }],
    ["gemini-3.8-flash", "minimal", { thinkingLevel: "LOW" }],
    ["gemini-3.8-flash", "medium", { thinkingLevel: "MEDIUM" }],
    ["gemini-4-argon", "minimal", { thinkingLevel: "LOW" }],
    ["gemini-3-flash-preview", "high", { thinkingLevel: "HIGH" }],
    ["gemini-3.1-pro-preview", "minimal", { thinkingLevel: "LOW" }],
    ["gemini-2.5-flash", "minimal", { thinkingBudget: 0 }],
    ["gemini-2.5-pro", "minimal", { thinkingBudget: 128 }],
    ["gemini-2.5-flash", "medium", { thinkingBudget: 8192 }],
    ["gemini-2.0-flash", "high", undefined],
  ] as const)(
    "sends %s at thinking level %s as the config it accepts",
    async (model, level, want) => {
      const { client } = setup();
      await client.generate({ model, contents: [ask("hi")], thinkingLevel: level });
      await client.generate({ model, contents: [ask("hi")] });
      expect(fake.requests[0]?.body.generationConfig?.thinkingConfig).toEqual(want);
      expect(fake.requests[1]?.body.generationConfig?.thinkingConfig).toBeUndefined();
      expect(fake.rejections).toEqual([]);
    },
  );

  it("is refused by the fake when the thinking config does not fit the model", async () => {
    const raw = (model: string, thinkingConfig: object) =>
      fetch(`${fake.baseUrl}/v1beta/models/${model}:generateContent`, {
        method: "POST",
        headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [ask("hi")], generationConfig: { thinkingConfig } }),
      });
    expect((await raw("gemini-2.5-flash", { thinkingLevel: "LOW" })).status).toBe(400);
    expect((await raw("gemini-3-pro-preview", { thinkingLevel: "MINIMAL" })).status).toBe(400);
    expect((await raw("gemini-3.8-flash", { thinkingLevel: "MINIMAL" })).status).toBe(400);
    expect((await raw(MODEL, { thinkingLevel: "LOW", thinkingBudget: 10 })).status).toBe(400);
    expect(fake.rejections.map((r) => r.message)).toEqual([
      "Thinking level is not supported for this model.",
      "Thinking level MINIMAL is not supported for this model.",
      "Thinking level MINIMAL is not supported for this model.",
      "You can only set one of thinking budget and thinking level.",
    ]);
  });

  it("retries 503s with exponential full-jitter backoff, then succeeds", async () => {
    fake.script(status(503), status(503), text("back"));
    const { client, sleeps } = setup({ random: () => 0.999 });
    const result = await client.generate({ model: MODEL, contents: [ask("hi")] });
    expect(result.content.parts).toEqual([{ text: "back" }]);
    expect(fake.requests).toHaveLength(3);
    expect(sleeps).toEqual([499, 999]);
  });

  it("waits as long as a 429's retry hint says, within the call's budget", async () => {
    fake.script(
      status(429, "quota", { retryDelay: "3s" }),
      status(429, "quota", { retryDelay: "30s" }),
      text("ok"),
    );
    const { client, sleeps } = setup({ random: () => 0 });
    await client.generate({ model: MODEL, contents: [ask("hi")] });
    // The wait is what is left of the hint when the next attempt looks.
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeGreaterThan(2_900);
    expect(sleeps[0]).toBeLessThanOrEqual(3_000);
    expect(sleeps[1]).toBeGreaterThan(29_900);
    expect(sleeps[1]).toBeLessThanOrEqual(30_000);
  });

  it("gives up at once on a 429 whose hint is past the call's budget, without asking again", async () => {
    fake.script(status(429, "quota", { retryDelay: "60s" }), text("too late"));
    const { client, sleeps } = setup({ random: () => 0 });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error).toBeInstanceOf(GeminiUnavailableError);
    expect(error.status).toBe(429);
    expect(error.message).toMatch(/limits this API key's requests \(429\) for 60 s more/);
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("gives up as unavailable after maxAttempts", async () => {
    fake.setDefault(status(503));
    const { client, sleeps } = setup({ retry: { maxAttempts: 3 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error).toBeInstanceOf(GeminiUnavailableError);
    expect(error.kind).toBe("unavailable");
    expect(error.userMessage).toBe("Gemini is unavailable, try again in a minute.");
    expect(error.status).toBe(503);
    expect(fake.requests).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
  });

  it("stops retrying when the next delay would overrun the total budget", async () => {
    fake.setDefault(status(500));
    const { client, sleeps } = setup({
      random: () => 0.999,
      retry: { maxAttempts: 10, maxTotalMs: 2_000 },
    });
    await expect(client.generate({ model: MODEL, contents: [ask("hi")] })).rejects.toBeInstanceOf(
      GeminiUnavailableError,
    );
    expect(sleeps).toEqual([499, 999]);
    expect(fake.requests).toHaveLength(3);
  });

  it("asks again when a stream breaks, however long it streamed before, with the budget's time", async () => {
    const answer = "a long answer, written for a while. ".repeat(10);
    // Scaled down: a retry budget smaller than the time the first answer streamed.
    fake.script(
      streamed(text(answer), { chunkChars: 36, chunkDelayMs: 60, breakAfter: 9 }),
      text(answer),
    );
    const { client } = setup({ retry: { baseMs: 1, maxMs: 2, maxTotalMs: 300 } });
    const restarts: number[] = [];
    const result = await client.generate({
      model: MODEL,
      contents: [ask("q")],
      stream: { onText: () => {}, onRestart: () => restarts.push(1) },
    });
    expect(result.content.parts?.[0]?.text).toBe(answer);
    expect(fake.requests).toHaveLength(2);
    expect(restarts).toEqual([1]);
  });

  it("tells whoever shows the answer to start over when a 429 comes inside the stream", async () => {
    const retryInfo = { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "0.01s" };
    fake.script(
      streamed(text("the first try, cut"), {
        chunkChars: 5,
        errorAfter: {
          chunks: 2,
          code: 429,
          status: "RESOURCE_EXHAUSTED",
          message: "You exceeded your current quota.",
          details: [retryInfo],
        },
      }),
      text("the second try"),
    );
    const { client } = setup();
    const shown: string[] = [];
    const result = await client.generate({
      model: MODEL,
      contents: [ask("q")],
      stream: { onText: (t) => shown.push(t), onRestart: () => shown.push("(restart)") },
    });
    expect(result.content.parts?.[0]?.text).toBe("the second try");
    expect(shown).toContain("(restart)");
    expect(shown.slice(shown.indexOf("(restart)") + 1).every((t) => !t.includes("first"))).toBe(
      true,
    );
  });

  it.each([400, 403, 404])("treats a %i as refused and does not retry it", async (code) => {
    fake.script(status(code, `Invalid value at 'tools' (${code})`));
    const { client, sleeps } = setup();
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error).toBeInstanceOf(GeminiRefusedError);
    expect(error.kind).toBe("refused");
    expect(error.userMessage).toBe(
      `Gemini refused the request: Invalid value at 'tools' (${code})`,
    );
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("refuses what the SDK rejects before sending", async () => {
    const { client } = setup();
    const error = await failureOf(client.generate({ model: MODEL, contents: [] }));
    expect(error.userMessage).toBe("Gemini refused the request: contents are required");
    expect(fake.requests).toHaveLength(0);
  });

  it("retries a hanging request after the timeout, then reports unavailable", async () => {
    fake.setDefault(hang());
    const { client, sleeps } = setup({ timeoutMs: 100, retry: { maxAttempts: 2 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error.kind).toBe("unavailable");
    expect(error.message).toContain("timeout");
    expect(fake.requests).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
  });

  it("leaves no deadline armed once an answer is back", async () => {
    // A duration nothing else here uses tells the request deadlines from other timers.
    const timeoutMs = 54_321;
    const armed = new Set<number>();
    const hook = createHook({
      init(id, type, _trigger, resource) {
        // Node's Timeout keeps its duration in _idleTimeout; it has no public getter.
        if (
          type === "Timeout" &&
          (resource as { _idleTimeout?: number })._idleTimeout === timeoutMs
        )
          armed.add(id);
      },
      destroy(id) {
        armed.delete(id);
      },
    });
    const { client } = setup({ timeoutMs });
    hook.enable();
    try {
      for (let i = 0; i < 3; i++) {
        fake.script(text(`answer ${i}`));
        await client.generate({ model: MODEL, contents: [ask("hi")] });
      }
      expect(armed.size).toBeGreaterThan(0);
      // Destroy hooks run after the turn of the event loop that cleared the timer.
      await vi.waitFor(() => expect(armed.size).toBe(0), { timeout: 2_000 });
    } finally {
      hook.disable();
    }
  });

  it("retries network errors, and names the cause and the address", async () => {
    const baseUrl = `http://127.0.0.1:${await refusingPort()}`;
    const { client, sleeps, logLines } = setup({ baseUrl, retry: { maxAttempts: 2 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error).toBeInstanceOf(GeminiUnavailableError);
    expect(error.userMessage).toBe(
      "Gemini is unavailable (connection refused), try again in a minute.",
    );
    expect((error as GeminiUnavailableError).reason).toBe(
      `could not reach ${baseUrl}: connection refused (ECONNREFUSED: connect ECONNREFUSED ${baseUrl.slice(7)})`,
    );
    expect(sleeps).toHaveLength(1);
    const retried = logLines.map((line) => JSON.parse(line)).find((l) => l.attempt === 1);
    expect(retried).toMatchObject({
      msg: "Gemini call failed; retrying",
      reason: (error as GeminiUnavailableError).reason,
    });
  });

  it("says a name that does not resolve is a DNS failure", async () => {
    const { client } = setup({ baseUrl: "http://no-such-host.invalid", retry: { maxAttempts: 1 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error.userMessage).toBe(
      "Gemini is unavailable (its address could not be looked up (DNS)), try again in a minute.",
    );
    expect(error.message).toMatch(
      /could not reach http:\/\/no-such-host\.invalid: its address could not be looked up \(DNS\) \((ENOTFOUND|EAI_AGAIN)/,
    );
  });

  it("says which address did not answer within the timeout", async () => {
    fake.script(hang());
    const { client } = setup({ timeoutMs: 50, retry: { maxAttempts: 1 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error.userMessage).toBe(
      "Gemini is unavailable (it did not answer in time), try again in a minute.",
    );
    expect((error as GeminiUnavailableError).reason).toBe(
      `no answer from ${fake.baseUrl} before the timeout of 0.05 s`,
    );
  });

  it.each([
    ["a foreign", "Zm9yZWlnbg=="],
    ["a missing", undefined],
  ])("recovers once from %s thought signature with the placeholder", async (_, signature) => {
    const { client, logLines } = setup();
    const contents = [ask("time?"), timeCall(signature), timeAnswer];
    const before = structuredClone(contents);
    const result = await client.generate({ model: MODEL, contents });
    expect(result.content.parts).toEqual([{ text: "ok" }]);
    expect(fake.rejections).toHaveLength(1);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]?.body.contents[1]?.parts?.[0]?.thoughtSignature).toBe(
      SKIP_THOUGHT_SIGNATURE,
    );
    expect(contents).toEqual(before);
    expect(
      logLines.some((line) => line.includes("placeholder") && line.includes('"level":40')),
    ).toBe(true);
  });

  it("does not repair signatures twice", async () => {
    fake.script(
      status(400, "Corrupted thought signature."),
      status(400, "Corrupted thought signature."),
    );
    const { client } = setup();
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    expect(error.userMessage).toBe("Gemini refused the request: Corrupted thought signature.");
    expect(fake.requests).toHaveLength(2);
  });

  it.each([
    ["a safety stop", empty("SAFETY"), { finishReason: "SAFETY" }],
    [
      "a blocked prompt",
      blockedPrompt("PROHIBITED_CONTENT"),
      { blockReason: "PROHIBITED_CONTENT" },
    ],
  ])("returns %s as a turn without parts, with its reason", async (_, step, reason) => {
    fake.script(step);
    const { client } = setup();
    const result = await client.generate({ model: MODEL, contents: [ask("hi")] });
    expect(result.content).toEqual({ role: "model", parts: [] });
    expect({ finishReason: result.finishReason, blockReason: result.blockReason }).toEqual({
      finishReason: undefined,
      blockReason: undefined,
      ...reason,
    });
  });

  it("takes the first of several candidates", async () => {
    fake.script({ ...text("first"), otherCandidates: [[{ text: "second" }]] });
    const { client } = setup();
    const result = await client.generate({ model: MODEL, contents: [ask("hi")] });
    expect(result.content.parts).toEqual([{ text: "first" }]);
  });

  it("never puts the API key in errors or logs", async () => {
    const wrongKey = "AIzaSy-wrong-secret-key-456";
    const refused = await failureOf(
      setup({ apiKey: wrongKey }).client.generate({ model: MODEL, contents: [ask("hi")] }),
    );
    expect(refused.userMessage).toBe(
      "Gemini refused the request: API key not valid. Please pass a valid API key.",
    );
    expect(`${refused.message} ${refused.userMessage}`).not.toContain(wrongKey);

    fake.setDefault(status(500, `upstream rejected key ${KEY}`));
    const { client, logLines } = setup({ retry: { maxAttempts: 2 } });
    const error = await failureOf(client.generate({ model: MODEL, contents: [ask("hi")] }));
    const everything = [error.message, error.userMessage, error.stack ?? "", ...logLines].join(
      "\n",
    );
    expect(logLines).toHaveLength(1);
    expect(everything).toContain("[redacted]");
    expect(everything).not.toContain(KEY);
  });
});
