import { ApiError, type Content, GoogleGenAI, type Part } from "@google/genai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { describeFailure } from "../../src/agent/gemini-errors.js";
import { apiErrorOf } from "../helpers/api-error.js";
import {
  blockedPrompt,
  call,
  calls,
  combine,
  type FakeGemini,
  hang,
  SKIP_SIGNATURE,
  serverTool,
  startFakeGemini,
  status,
  streamed,
  text,
  thought,
} from "./gemini.js";

const MODEL = "gemini-test";
const ask = (value: string): Content => ({ role: "user", parts: [{ text: value }] });
const answer = (name: string, output: unknown, id?: string): Part => ({
  functionResponse: { name, response: { output }, ...(id ? { id } : {}) },
});

describe("fake Gemini through the real SDK", () => {
  let fake: FakeGemini;
  let ai: GoogleGenAI;
  const generate = (contents: Content[], model = MODEL) =>
    ai.models.generateContent({ model, contents });
  /** Asks once and returns the model turn the fake answered with. */
  const modelTurn = async (contents: Content[]): Promise<Content> => {
    const response = await generate(contents);
    const content = response.candidates?.[0]?.content;
    if (!content) throw new Error("the fake answered without content");
    return content;
  };

  beforeEach(async () => {
    fake = await startFakeGemini();
    ai = new GoogleGenAI({
      apiKey: "test-key",
      vertexai: false,
      httpOptions: { baseUrl: fake.baseUrl },
    });
  });
  afterEach(() => fake.close());

  it("answers scripted text, then the default, and records what was sent", async () => {
    fake.script(combine(thought("thinking"), text("hi")));
    const contents = [ask("hello")];
    const response = await ai.models.generateContent({
      model: MODEL,
      contents,
      config: { systemInstruction: "be brief", tools: [{ functionDeclarations: [{ name: "f" }] }] },
    });
    expect(response.text).toBe("hi");
    expect(response.candidates?.[0]?.content?.parts?.[0]).toEqual({
      text: "thinking",
      thought: true,
    });
    // The prompt counts the system instruction and the tools too, as Gemini counts them.
    const sent = fake.requests[0]?.body;
    const promptChars = [sent?.systemInstruction, sent?.tools, contents]
      .map((piece) => JSON.stringify(piece).length)
      .reduce((a, b) => a + b, 0);
    expect(response.usageMetadata?.promptTokenCount).toBe(Math.ceil(promptChars / 4));
    expect(response.usageMetadata?.cachedContentTokenCount).toBeUndefined();
    expect((await generate(contents)).text).toBe("ok");
    expect(fake.requests[0]).toMatchObject({
      model: MODEL,
      apiKey: "test-key",
      body: {
        contents,
        systemInstruction: { parts: [{ text: "be brief" }] },
        tools: [{ functionDeclarations: [{ name: "f" }] }],
      },
    });
    expect(fake.rejections).toEqual([]);
  });

  it("accepts a signed call answered by its response", async () => {
    fake.script(call("get_time", { tz: "UTC" }), text("It is noon"));
    const history = [ask("time?")];
    const turn = await modelTurn(history);
    const signature = turn.parts?.[0]?.thoughtSignature;
    expect(signature).toMatch(/^[A-Za-z0-9+/]{20,}={0,2}$/);
    expect(fake.issued).toMatchObject([{ name: "get_time", args: { tz: "UTC" }, signature }]);
    const next = await generate([
      ...history,
      turn,
      { role: "user", parts: [answer("get_time", "12:00")] },
    ]);
    expect(next.text).toBe("It is noon");
    expect(fake.rejections).toEqual([]);
  });

  it("signs every parallel call and wants exactly one response per call, ids matching", async () => {
    fake.script(
      calls([
        { name: "a", id: "1" },
        { name: "b", id: "2" },
      ]),
    );
    const history = [ask("both")];
    const turn = await modelTurn(history);
    expect(turn.parts?.every((part) => typeof part.thoughtSignature === "string")).toBe(true);

    const one = await apiErrorOf(
      generate([...history, turn, { role: "user", parts: [answer("a", 1, "1")] }]),
    );
    expect(one.status).toBe(400);
    expect(fake.lastError?.message).toContain("number of function response parts is equal");

    const wrongIds = [answer("a", 1, "1"), answer("b", 2, "9")];
    await apiErrorOf(generate([...history, turn, { role: "user", parts: wrongIds }]));
    expect(fake.lastError?.message).toContain("ids");

    const right = [answer("b", 2, "2"), answer("a", 1, "1")];
    expect((await generate([...history, turn, { role: "user", parts: right }])).text).toBe("ok");
  });

  it("refuses a call that lost its signature, with the real message", async () => {
    fake.script(call("get_time"));
    const history = [ask("time?")];
    const turn = await modelTurn(history);
    const stripped = { role: "model", parts: [{ functionCall: { name: "get_time", args: {} } }] };
    const error = await apiErrorOf(
      generate([...history, stripped, { role: "user", parts: [answer("get_time", "noon")] }]),
    );
    expect(error.status).toBe(400);
    expect(JSON.parse(error.message)).toMatchObject({
      error: { code: 400, status: "INVALID_ARGUMENT" },
    });
    expect(fake.lastError?.message).toMatch(/^Function call is missing a thought_signature/);
    expect(fake.requests.at(-1)?.rejection).toBe(fake.lastError?.message);
    expect(turn.parts?.[0]?.thoughtSignature).toBeDefined();
  });

  it("wants its own calls signed in older turns too, unlike hand-written unsigned ones", async () => {
    fake.script(call("get_time"));
    await modelTurn([ask("time?")]);
    const olderTurn = (args: Record<string, unknown>): Content[] => [
      ask("time?"),
      { role: "model", parts: [{ functionCall: { name: "get_time", args } }] },
      { role: "user", parts: [answer("get_time", "noon")] },
      { role: "model", parts: [{ text: "noon" }] },
      ask("thanks"),
    ];
    await apiErrorOf(generate(olderTurn({})));
    expect(fake.lastError?.message).toContain("missing a thought_signature");
    expect((await generate(olderTurn({ tz: "UTC" }))).text).toBe("ok");
    expect(fake.rejections).toHaveLength(1);
  });

  it("refuses an unknown signature as corrupted but accepts the documented placeholder", async () => {
    const withSignature = (thoughtSignature: string): Content[] => [
      ask("time?"),
      {
        role: "model",
        parts: [{ functionCall: { name: "get_time", args: {} }, thoughtSignature }],
      },
      { role: "user", parts: [answer("get_time", "noon")] },
    ];
    await apiErrorOf(generate(withSignature("Zm9yZWlnbg==")));
    expect(fake.lastError?.message).toBe("Corrupted thought signature.");
    expect((await generate(withSignature(SKIP_SIGNATURE))).text).toBe("ok");
    expect(fake.rejections).toHaveLength(1);
  });

  it("refuses a signature moved onto a different call", async () => {
    fake.script(call("get_time", { tz: "UTC" }));
    const turn = await modelTurn([ask("time?")]);
    const signature = turn.parts?.[0]?.thoughtSignature;
    const moved = {
      functionCall: { name: "get_time", args: { tz: "CET" } },
      thoughtSignature: signature,
    };
    await apiErrorOf(
      generate([
        ask("time?"),
        { role: "model", parts: [moved] },
        { role: "user", parts: [answer("get_time", 1)] },
      ]),
    );
    expect(fake.lastError?.message).toBe("Corrupted thought signature.");
  });

  it("refuses calls left unanswered and responses without a call", async () => {
    fake.script(call("get_time"));
    const history = [ask("time?")];
    const turn = await modelTurn(history);
    await apiErrorOf(generate([...history, turn]));
    expect(fake.lastError?.message).toContain("no function responses follow it");
    await apiErrorOf(generate([...history, turn, ask("never mind")]));
    expect(fake.lastError?.message).toContain("has 0 function response(s)");
    await apiErrorOf(generate([...history, { role: "user", parts: [answer("get_time", 1)] }]));
    expect(fake.lastError?.message).toContain("function response turn comes immediately after");
    expect(fake.rejections).toHaveLength(3);
  });

  it("wants server-side tool parts back in the model's turn, signed, and the combination flag", async () => {
    fake.script(
      combine(serverTool("GOOGLE_SEARCH_WEB", { queries: ["q"] }, { r: 1 }, "s1"), text("a")),
    );
    const history = [ask("q?")];
    const turn = await modelTurn(history);
    const [toolCall, toolResponse, answerText] = turn.parts ?? [];
    expect(toolCall?.thoughtSignature).toMatch(/./);
    const next = (parts: Part[]) => generate([...history, { role: "model", parts }, ask("more")]);
    await next(turn.parts ?? []);
    expect(fake.rejections).toEqual([]);
    await apiErrorOf(
      next([
        { ...toolCall, thoughtSignature: undefined },
        toolResponse as Part,
        answerText as Part,
      ]),
    );
    expect(fake.lastError?.message).toContain("missing its thought_signature");
    await apiErrorOf(next([toolResponse as Part, toolCall as Part]));
    expect(fake.lastError?.message).toContain("must follow the tool_call with the same id");
    await apiErrorOf(generate([{ role: "user", parts: [toolCall as Part] }]));
    expect(fake.lastError?.message).toContain("only allowed in model turns");
    await apiErrorOf(
      ai.models.generateContent({
        model: MODEL,
        contents: [ask("q")],
        config: { tools: [{ googleSearch: {}, functionDeclarations: [{ name: "f" }] }] },
      }),
    );
    expect(fake.lastError?.message).toContain("include_server_side_tool_invocations");
    expect(fake.rejections).toHaveLength(4);
  });

  it("refuses two turns of one role in a row and a request ending on the model's turn", async () => {
    await apiErrorOf(generate([ask("a"), ask("b")]));
    expect(fake.lastError?.message).toBe(
      "Please ensure that multiturn requests alternate between user and model.",
    );
    await apiErrorOf(generate([ask("a"), { role: "model", parts: [{ text: "x" }] }]));
    expect(fake.lastError?.message).toContain("last content has the model role");
  });

  it("refuses parts without data and empty contents, in the real error shape", async () => {
    await apiErrorOf(generate([{ role: "user", parts: [{ thought: true }] }]));
    expect(fake.lastError?.message).toContain("required oneof field 'data'");
    const raw = await fetch(`${fake.baseUrl}/v1beta/models/${MODEL}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": "k", "content-type": "application/json" },
      body: JSON.stringify({ contents: [] }),
    });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toEqual({
      error: {
        code: 400,
        message: "* GenerateContentRequest.contents: contents is not specified\n",
        status: "INVALID_ARGUMENT",
      },
    });
  });

  it("checks inline data: base64, the MIME types Gemini reads, the 100 MB limit", async () => {
    const inline = (mimeType: string, data: string): Content => ({
      role: "user",
      parts: [{ inlineData: { mimeType, data } }, { text: "what is it?" }],
    });
    await generate([inline("image/png", Buffer.from("png bytes").toString("base64"))]);
    expect(fake.rejections).toEqual([]);
    await apiErrorOf(generate([inline("image/png", "not base64!")]));
    expect(fake.lastError?.message).toContain("Base64 decoding failed");
    await apiErrorOf(generate([inline("application/zip", "AAAA")]));
    expect(fake.lastError?.message).toContain("Unsupported MIME type: application/zip");
    const half = Buffer.alloc(51 * 1024 * 1024).toString("base64");
    await apiErrorOf(generate([inline("video/mp4", half), inline("video/mp4", half)]));
    expect(fake.lastError?.message).toContain("exceeds the limit");
  });

  it("routes steps by model and lets a function step answer from the request", async () => {
    fake.scriptFor("summary-model", (request) =>
      text(`summary of ${request.body.contents.length} contents`),
    );
    fake.script(text("chat"));
    expect((await generate([ask("a")])).text).toBe("chat");
    const exchange: Content[] = [ask("a"), { role: "model", parts: [{ text: "x" }] }, ask("b")];
    expect((await generate(exchange, "summary-model")).text).toBe("summary of 3 contents");
    expect(fake.pendingSteps()).toBe(0);
  });

  it("serves scripted errors with retry hints, blocked prompts and usage overrides", async () => {
    fake.script(status(429, "quota", { retryDelay: "2s" }), blockedPrompt(), {
      ...text("counted"),
      usage: { promptTokenCount: 7, candidatesTokenCount: 3 },
    });
    const error = await apiErrorOf(generate([ask("a")]));
    expect(error.status).toBe(429);
    expect(JSON.parse(error.message)).toMatchObject({
      error: { status: "RESOURCE_EXHAUSTED", details: [{ retryDelay: "2s" }] },
    });
    const blocked = await generate([ask("a")]);
    expect(blocked.candidates).toBeUndefined();
    expect(blocked.promptFeedback?.blockReason).toBe("SAFETY");
    const counted = await generate([ask("a")]);
    expect(counted.usageMetadata).toMatchObject({ promptTokenCount: 7, totalTokenCount: 10 });
    expect(fake.rejections).toEqual([]);
  });

  describe("implicit caching", () => {
    // About 5,000 tokens as the fake counts them (characters / 4).
    const long = (label: string) => ask(`${label} ${"word ".repeat(4_000)}`);
    const cachedOf = (response: { usageMetadata?: { cachedContentTokenCount?: number } }) =>
      response.usageMetadata?.cachedContentTokenCount ?? 0;
    const ask2 = (
      contents: Content[],
      config: { systemInstruction?: string } = {},
      model = MODEL,
    ) => ai.models.generateContent({ model, contents, config });

    it("reports the prefix shared with a recent request of the key and model as cached", async () => {
      const first = [long("first")];
      const opening = await generate(first);
      expect(cachedOf(opening)).toBe(0);
      const turn = opening.candidates?.[0]?.content as Content;
      const next = await generate([...first, turn, ask("and then?")]);
      const prompt = next.usageMetadata?.promptTokenCount ?? 0;
      const firstPrompt = opening.usageMetadata?.promptTokenCount ?? 0;
      // Everything the first request held but its closing bracket.
      expect(cachedOf(next)).toBeGreaterThanOrEqual(firstPrompt - 1);
      expect(cachedOf(next)).toBeLessThan(prompt);
      expect(fake.rejections).toEqual([]);
    });

    it("caches nothing below the model's minimum, for a changed start or another key", async () => {
      const short = [ask("short question")];
      await generate(short);
      expect(cachedOf(await generate(short))).toBe(0);
      const contents = [long("same")];
      await ask2(contents, { systemInstruction: "Today is Monday." });
      const changed = await ask2(contents, { systemInstruction: "Today is Tuesday." });
      expect(cachedOf(changed)).toBe(0);
      const again = await ask2(contents, { systemInstruction: "Today is Tuesday." });
      expect(cachedOf(again)).toBe(again.usageMetadata?.promptTokenCount);
      const other = new GoogleGenAI({
        apiKey: "other-key",
        vertexai: false,
        httpOptions: { baseUrl: fake.baseUrl },
      });
      const stranger = await other.models.generateContent({
        model: MODEL,
        contents,
        config: { systemInstruction: "Today is Tuesday." },
      });
      expect(cachedOf(stranger)).toBe(0);
    });

    it("knows the minimum per model: 2,048 tokens for 2.5, none before 2.5", async () => {
      // About 3,000 tokens: cached on 2.5 Flash, not on a model that wants 4,096.
      const medium = [ask(`x ${"word ".repeat(2_400)}`)];
      for (const model of ["gemini-2.5-flash", "gemini-3.6-flash", "gemini-2.0-flash"]) {
        await generate(medium, model);
      }
      expect(cachedOf(await generate(medium, "gemini-2.5-flash"))).toBeGreaterThan(2_048);
      expect(cachedOf(await generate(medium, "gemini-3.6-flash"))).toBe(0);
      const big = [long("big")];
      await generate(big, "gemini-2.0-flash");
      expect(cachedOf(await generate(big, "gemini-2.0-flash"))).toBe(0);
    });

    it("can be turned off, and a step's usage wins", async () => {
      const plain = await startFakeGemini({ implicitCaching: false });
      try {
        const client = new GoogleGenAI({
          apiKey: "k",
          vertexai: false,
          httpOptions: { baseUrl: plain.baseUrl },
        });
        const contents = [long("off")];
        await client.models.generateContent({ model: MODEL, contents });
        const again = await client.models.generateContent({ model: MODEL, contents });
        expect(cachedOf(again)).toBe(0);
      } finally {
        await plain.close();
      }
      const contents = [long("override")];
      fake.script(text("a"), { ...text("b"), usage: { cachedContentTokenCount: 10 } });
      await generate(contents);
      expect(cachedOf(await generate(contents))).toBe(10);
    });
  });

  it("answers every call 429 while a quota is spent, with the time left as RetryInfo among other details", async () => {
    fake.limitFor(1_500);
    const error = await apiErrorOf(generate([ask("a")]));
    expect(error.status).toBe(429);
    const failure = describeFailure(error, "", ApiError);
    expect(failure).toMatchObject({ retryable: true, status: 429, retryAfterMs: 2_000 });
    expect(failure.reason).toMatch(/^You exceeded your current quota/);
    fake.limitFor(60_000, { retryDelay: "0.5s" });
    const hinted = await apiErrorOf(generate([ask("b")]));
    expect(describeFailure(hinted, "", ApiError).retryAfterMs).toBe(500);
    fake.limitFor(0);
    expect((await generate([ask("c")])).text).toBe("ok");
    expect(fake.limited).toHaveLength(2);
    expect(fake.rejections).toEqual([]);
  });

  it("streams as server-sent events: pieces, the signature last on empty text, calls whole", async () => {
    fake.script(
      streamed(
        combine(
          thought("ab"),
          { kind: "reply", parts: [{ text: "hello world", thoughtSignature: "c2ln" }] },
          call("get_time", { zone: "UTC" }, { id: "c1" }),
        ),
        { chunkChars: 4, chunkDelayMs: 40 },
      ),
    );
    const arrived: number[] = [];
    const chunks: Part[][] = [];
    const reasons: (string | undefined)[] = [];
    const stream = await ai.models.generateContentStream({ model: MODEL, contents: [ask("a")] });
    for await (const chunk of stream) {
      arrived.push(Date.now());
      chunks.push(chunk.candidates?.[0]?.content?.parts ?? []);
      reasons.push(chunk.candidates?.[0]?.finishReason);
    }
    expect(chunks).toEqual([
      [{ text: "ab", thought: true }],
      [{ text: "hell" }],
      [{ text: "o wo" }],
      [{ text: "rld" }],
      [{ text: "", thoughtSignature: "c2ln" }],
      [
        {
          functionCall: { name: "get_time", args: { zone: "UTC" }, id: "c1" },
          thoughtSignature: fake.issued[0]?.signature,
        },
      ],
    ]);
    expect(reasons).toEqual([undefined, undefined, undefined, undefined, undefined, "STOP"]);
    // The pauses between chunks reach the client: it sees each chunk as it is sent.
    expect((arrived.at(-1) ?? 0) - (arrived[0] ?? 0)).toBeGreaterThanOrEqual(5 * 35);
    expect(fake.requests[0]?.stream).toBe(true);
    expect(fake.rejections).toEqual([]);
  });

  it("cuts a stream before its finishing chunk, or garbles it, as asked, and nothing else", async () => {
    const read = async () => {
      const texts: (string | undefined)[] = [];
      const reasons: (string | undefined)[] = [];
      const stream = await ai.models.generateContentStream({ model: MODEL, contents: [ask("a")] });
      for await (const chunk of stream) {
        texts.push(chunk.candidates?.[0]?.content?.parts?.[0]?.text);
        reasons.push(chunk.candidates?.[0]?.finishReason);
      }
      return { texts, reasons };
    };
    fake.script(streamed(text("hello world"), { chunkChars: 4, endAfter: 2 }));
    expect(await read()).toEqual({ texts: ["hell", "o wo"], reasons: [undefined, undefined] });

    fake.script(streamed(text("hello world"), { chunkChars: 4, garbageAfter: 1 }));
    const seen: (string | undefined)[] = [];
    const garbled = async () => {
      const stream = await ai.models.generateContentStream({ model: MODEL, contents: [ask("a")] });
      for await (const chunk of stream) seen.push(chunk.candidates?.[0]?.content?.parts?.[0]?.text);
    };
    await expect(garbled()).rejects.toThrow(SyntaxError);
    expect(seen).toEqual(["hell"]);

    // A cut past the last chunk would be the whole answer: the fake refuses the step.
    fake.script(streamed(text("hello world"), { chunkChars: 4, endAfter: 3 }));
    await expect(read()).rejects.toThrow(/endAfter 3 must leave out the finishing chunk of 3/);
    expect(fake.rejections).toEqual([]);
  });

  it("refuses a stream that is not asked for as server-sent events", async () => {
    const raw = await fetch(`${fake.baseUrl}/v1beta/models/${MODEL}:streamGenerateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": "k", "content-type": "application/json" },
      body: JSON.stringify({ contents: [ask("a")] }),
    });
    expect(raw.status).toBe(400);
    expect(fake.rejections).toHaveLength(1);
  });

  it("holds a hang step until the client gives up", async () => {
    fake.script(hang());
    const impatient = new GoogleGenAI({
      apiKey: "k",
      vertexai: false,
      // Long enough for a busy host's fake to read the request before the client gives up.
      httpOptions: { baseUrl: fake.baseUrl, timeout: 1_000 },
    });
    await expect(
      impatient.models.generateContent({ model: MODEL, contents: [ask("a")] }),
    ).rejects.toThrow(/abort/i);
    expect(fake.requests).toHaveLength(1);
  });
});
