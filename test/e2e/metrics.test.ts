import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, streamed, text } from "../fakes/gemini.js";
import { eventually, type ServiceWorld, startWorld } from "../helpers/service-process.js";

const TOKEN = "scrape-me-please";

/** The value of one sample line, e.g. `koroku_turns_total{outcome="answered"}`. */
function sample(body: string, series: string): number | undefined {
  const line = body.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("koroku_first_visible_text_seconds in a group whose answers are not shown as written", () => {
  it("is the moment the message goes out, not the stream's first words", async () => {
    const w = await startWorld({ env: { STREAMING: "draft", METRICS_TOKEN: TOKEN } });
    try {
      const group = -4_000_001;
      // About 1.5 s of stream; the group sees nothing until its message goes out after it.
      w.gemini.script(streamed(text("words ".repeat(150)), { chunkChars: 30, chunkDelayMs: 50 }));
      await w.say(`@${w.telegram.bot.username} tell me`, { chatId: group });
      await eventually(() => w.telegram.sent.find((m) => m.chat_id === group));
      const body = await eventually(async () => {
        const res = await fetch(`${w.service.baseUrl}/metrics`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const text = await res.text();
        return sample(text, "koroku_first_visible_text_seconds_count") === 1 ? text : undefined;
      });
      expect(sample(body, 'koroku_first_visible_text_seconds_bucket{le="1"}')).toBe(0);
    } finally {
      await w.close();
    }
  });
});

describe("GET /metrics (the real service, webhook mode)", () => {
  let w: ServiceWorld;
  const scrape = async () => {
    const res = await fetch(`${w.service.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    w = await startWorld({ env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("needs METRICS_TOKEN as a bearer token when it is set", async () => {
    const url = `${w.service.baseUrl}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: TOKEN } })).status).toBe(401);
    const res = await fetch(url, { headers: { authorization: `bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const body = await res.text();
    expect(sample(body, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000);
    expect(body).toContain("# TYPE koroku_turn_duration_seconds histogram");
  });

  it("counts a turn, its model calls, tokens by kind, tool calls and the first visible text", async () => {
    w.gemini.script(
      {
        ...call("get_current_time"),
        usage: { promptTokenCount: 5_000, cachedContentTokenCount: 4_096 },
      },
      {
        ...text("It is late."),
        usage: {
          promptTokenCount: 5_100,
          cachedContentTokenCount: 4_096,
          candidatesTokenCount: 7,
          thoughtsTokenCount: 30,
        },
      },
    );
    await w.say("what time is it?");
    await eventually(() => w.telegram.sent.find((m) => m.plain_text === "It is late."));
    // The first visible text is counted once the answer's message is back from Telegram, which
    // the fake has before the service does.
    const body = await eventually(async () => {
      const b = await scrape();
      const done =
        sample(b, 'koroku_turns_total{outcome="answered"}') === 1 &&
        sample(b, "koroku_first_visible_text_seconds_count") === 1;
      return done ? b : undefined;
    });
    expect(sample(body, 'koroku_turn_duration_seconds_count{outcome="answered"}')).toBe(1);
    expect(
      sample(body, 'koroku_model_call_duration_seconds_count{model="chat-model",outcome="ok"}'),
    ).toBe(2);
    expect(sample(body, 'koroku_model_tokens_total{model="chat-model",kind="prompt"}')).toBe(
      10_100,
    );
    expect(sample(body, 'koroku_model_tokens_total{model="chat-model",kind="cached"}')).toBe(8_192);
    expect(sample(body, 'koroku_model_tokens_total{model="chat-model",kind="thoughts"}')).toBe(30);
    expect(sample(body, 'koroku_tool_calls_total{tool="get_current_time",outcome="ok"}')).toBe(1);
    expect(sample(body, "koroku_first_visible_text_seconds_count")).toBe(1);
    expect(sample(body, "koroku_inbox_pending")).toBe(0);
  });

  it("shows the inbox's backlog while a turn waits on Gemini", async () => {
    w.gemini.script({ ...text("slow answer"), delayMs: 1_500 });
    await w.say("take your time");
    const body = await eventually(async () => {
      const b = await scrape();
      return sample(b, "koroku_inbox_pending") === 1 ? b : undefined;
    });
    expect(sample(body, "koroku_inbox_oldest_pending_age_seconds")).toBeGreaterThan(0);
    await eventually(() => w.telegram.sent.find((m) => m.plain_text === "slow answer"));
  });

  it("counts Gemini's 429s and shows how long calls are held back", async () => {
    w.gemini.limitFor(1_500);
    w.gemini.script(text("after the quota came back"));
    await w.say("are you there?");
    const during = await eventually(async () => {
      const b = await scrape();
      return sample(b, "koroku_gemini_rate_limited_total") === 1 ? b : undefined;
    });
    expect(sample(during, "koroku_gemini_backoff_seconds")).toBeGreaterThan(0);
    await eventually(() =>
      w.telegram.sent.find((m) => m.plain_text === "after the quota came back"),
    );
    const after = await scrape();
    expect(sample(after, "koroku_gemini_rate_limited_total")).toBe(1);
    expect(sample(after, "koroku_gemini_backoff_seconds")).toBe(0);
  });

  it("counts Telegram's 429s per attempt", async () => {
    w.telegram.failNext("sendMessage", { error_code: 429, retry_after: 1 });
    w.gemini.script(text("after the flood wait"));
    await w.say("hello again");
    await eventually(() => w.telegram.sent.find((m) => m.plain_text === "after the flood wait"));
    const body = await scrape();
    expect(sample(body, 'koroku_telegram_errors_total{method="sendMessage",code="429"}')).toBe(1);
  });

  it("counts a flood wait Telegram answered to a live answer's draft", async () => {
    w.telegram.failNext("sendMessageDraft", { error_code: 429, retry_after: 1 });
    w.gemini.script(streamed(text("words ".repeat(200)), { chunkChars: 60, chunkDelayMs: 20 }));
    await w.say("a long one");
    await eventually(() => w.telegram.sent.find((m) => m.plain_text.startsWith("words words")));
    const body = await scrape();
    expect(sample(body, 'koroku_telegram_errors_total{method="sendMessageDraft",code="429"}')).toBe(
      1,
    );
  });
});
