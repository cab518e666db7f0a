import type { Content } from "@google/genai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGeminiClient, RATE_LIMIT_BACKOFF } from "../../src/agent/gemini-client.js";
import { createSharedLimit } from "../../src/retry/shared-limit.js";
import { type FakeGemini, startFakeGemini, streamed, text } from "../fakes/gemini.js";
import { captureLogger } from "../helpers/logs.js";

const KEY = "AIzaSy-rate-limit-key";
const MODEL = "gemini-test";
const TURNS = 10;
const ask = (value: string): Content => ({ role: "user", parts: [{ text: value }] });

/** Real time throughout: the fake's quota comes back by the clock, as Gemini's does. */
describe("one limit shared by every Gemini call of a process", () => {
  let fake: FakeGemini;
  beforeEach(async () => {
    fake = await startFakeGemini({ apiKey: KEY });
  });
  afterEach(() => fake.close());

  /** A client through one shared limit; `limited` holds each closing's wait. */
  function limitedClient(retry?: { maxTotalMs: number }) {
    const limited: number[] = [];
    const limit = createSharedLimit({
      policy: RATE_LIMIT_BACKOFF,
      onLimited: (ms) => limited.push(ms),
    });
    const { logger } = captureLogger([KEY]);
    const gemini = createGeminiClient({
      apiKey: KEY,
      baseUrl: fake.baseUrl,
      logger,
      limit,
      ...(retry ? { retry } : {}),
    });
    return { gemini, limited };
  }

  function client() {
    const { gemini, limited } = limitedClient();
    const generate = (i: number) =>
      gemini.generate({ model: MODEL, contents: [ask(`turn ${i}`)] }).then((result) => {
        const [part] = result.content.parts ?? [];
        return part?.text;
      });
    return { generate, limited };
  }

  const callsFor = (i: number) =>
    fake.requests.filter((r) => JSON.stringify(r.body.contents).includes(`turn ${i}"`));

  it("holds back every turn while the quota is spent: turns that start then make no call until it is back", async () => {
    const { generate, limited } = client();
    fake.limitFor(1_000);
    const quotaBack = Date.now() + 1_000;
    const first = Array.from({ length: TURNS }, (_, i) => generate(i));
    // Started once the first wave was turned away: they wait without asking.
    await expect.poll(() => limited.length).toBe(TURNS);
    const late = Array.from({ length: TURNS }, (_, i) => generate(TURNS + i));
    const answers = await Promise.all([...first, ...late]);
    expect(answers).toEqual(Array.from({ length: 2 * TURNS }, () => "ok"));
    // Only the calls already out when the quota ran out were turned away.
    expect(fake.limited).toHaveLength(TURNS);
    for (let i = 0; i < TURNS; i++) expect(callsFor(i)).toHaveLength(2);
    for (let i = TURNS; i < 2 * TURNS; i++) expect(callsFor(i)).toHaveLength(1);
    const answered = fake.requests.filter((r) => !fake.limited.includes(r));
    expect(Math.min(...answered.map((r) => r.at))).toBeGreaterThanOrEqual(quotaBack);
  });

  it("sends one probe at a time while the quota stays spent past its hint, then lets all go", async () => {
    const { generate } = client();
    // The hint says 0.2 s, but the quota comes back only after 1 s.
    fake.limitFor(1_000, { retryDelay: "0.2s" });
    const answers = await Promise.all(Array.from({ length: TURNS }, (_, i) => generate(i)));
    expect(answers).toEqual(Array.from({ length: TURNS }, () => "ok"));
    const probes = fake.limited.length - TURNS;
    // About one probe per 0.2 s (plus jitter) of the second that the quota stayed spent; each
    // turn retrying on its own would have been turned away about five times each.
    expect(probes).toBeGreaterThanOrEqual(2);
    expect(probes).toBeLessThanOrEqual(6);
    expect(fake.requests).toHaveLength(TURNS + probes + TURNS);
  });

  it("lets the calls waiting behind a probe go once Gemini takes it, not once its long answer ends", async () => {
    const { gemini } = limitedClient({ maxTotalMs: 2_000 });
    // Every answer streams for about 3 s, longer than the waiting call's budget of 2 s.
    fake.setDefault(streamed(text("x".repeat(120)), { chunkChars: 10, chunkDelayMs: 250 }));
    fake.limitFor(200, { retryDelay: "0.2s" });
    const stream = { onText: () => {}, onRestart: () => {} };
    const go = (i: number) =>
      gemini.generate({ model: MODEL, contents: [ask(`turn ${i}`)], stream }).then(
        () => "answered",
        (error: unknown) => String(error),
      );
    expect(await Promise.all([go(1), go(2)])).toEqual(["answered", "answered"]);
  }, 20_000);

  it("closes the limit on a 429 inside a stream, and the call gives up within its budget", async () => {
    const { gemini, limited } = limitedClient({ maxTotalMs: 2_000 });
    const retryInfo = { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "5s" };
    fake.setDefault(
      streamed(text("x".repeat(100)), {
        chunkChars: 10,
        errorAfter: {
          chunks: 1,
          code: 429,
          status: "RESOURCE_EXHAUSTED",
          message: "quota",
          details: [retryInfo],
        },
      }),
    );
    const stream = { onText: () => {}, onRestart: () => {} };
    const failed = await gemini
      .generate({ model: MODEL, contents: [ask("q")], stream })
      .catch((error: unknown) => error);
    expect(String(failed)).toMatch(
      /limits this API key's requests \(429\).*past this call's retry budget/,
    );
    expect(limited).toHaveLength(1);
    expect(fake.requests).toHaveLength(1);
  }, 10_000);
});
