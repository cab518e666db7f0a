import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RecordedRequest, status, text } from "../fakes/gemini.js";
import { buildTextUpdate, validateTelegramHtml } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

const USERS = Array.from({ length: 30 }, (_, i) => ALLOWED_USER + i);
/** The newest message: the last part, since messages Gemini never answered share one turn. */
const lastUserText = (r: RecordedRequest) => r.body.contents.at(-1)?.parts?.at(-1)?.text ?? "";
const echo = (r: RecordedRequest) => text(`echo: ${lastUserText(r)}`);

describe("Telegram service end to end (webhook mode, SQLite)", () => {
  let w: ServiceWorld;
  let nextUser = 0;
  const user = () => USERS[nextUser++] as number;
  const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
  const waitForText = (chatId: number, match: (t: string) => boolean, timeoutMs?: number) =>
    eventually(() => sentTo(chatId).find((m) => match(m.plain_text)), timeoutMs);

  beforeAll(async () => {
    w = await startWorld({ env: { ALLOWED_USER_IDS: USERS.join(",") } });
    w.gemini.setDefault(echo);
  });
  afterAll(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("registers its commands and webhook with the secret at start-up", () => {
    expect(w.telegram.commands.map((c) => c.command)).toEqual([
      "start",
      "help",
      "clear",
      "new",
      "history",
      "status",
      "compact",
      "stop",
      "tasks",
      "usage",
      "memory",
      "forget",
      "voice",
      "tools",
    ]);
    expect(w.telegram.webhook).toMatchObject({
      url: "https://koroku.test/telegram/webhook",
      secret_token: "test-webhook-secret",
    });
  });

  it("answers /healthz", async () => {
    const res = await fetch(`${w.service.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("refuses webhook calls without the right secret and bodies that are not updates", async () => {
    const before = w.gemini.requests.length;
    const update = buildTextUpdate({
      updateId: w.nextUpdateId(),
      messageId: 1,
      text: "sneaky",
      userId: ALLOWED_USER,
    });
    expect((await w.post(update, { secret: null })).status).toBe(401);
    expect((await w.post(update, { secret: "wrong" })).status).toBe(401);
    expect((await w.post(undefined, { raw: "{not json" })).status).toBe(400);
    expect((await w.post({ hello: "world" })).status).toBe(400);
    expect((await w.post(undefined, { raw: "x".repeat(2 * 1024 * 1024) })).status).toBe(413);
    expect((await fetch(`${w.service.baseUrl}/nope`)).status).toBe(404);
    expect(w.gemini.requests.length).toBe(before);
  });

  it("delivers an answer rendered to valid HTML, with typing shown", async () => {
    const u = user();
    // Slow enough for the typing indicator, which a fast answer does not need.
    w.gemini.script({
      ...text("Use **bold**, `a < b && c > d`, and an unbalanced *star"),
      delayMs: 600,
    });
    await w.say("format please", { userId: u });
    const message = await waitForText(u, (t) => t.includes("bold"));
    expect(message.parse_mode).toBe("HTML");
    expect(message.text).toContain("<b>bold</b>");
    expect(message.text).toContain("<code>a &lt; b &amp;&amp; c &gt; d</code>");
    expect(message.plain_text).toContain("unbalanced *star");
    expect(validateTelegramHtml(message.text).ok).toBe(true);
    expect(
      w.telegram.calls.some((c) => c.method === "sendChatAction" && c.body.chat_id === u),
    ).toBe(true);
  });

  it("runs a repeated update_id once", async () => {
    const u = user();
    const id = w.nextUpdateId();
    const update = buildTextUpdate({ updateId: id, messageId: id, text: "only once", userId: u });
    const statuses = await Promise.all([w.post(update), w.post(update), w.post(update)]);
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200]);
    await waitForText(u, (t) => t === "echo: only once");
    w.gemini.script(text("sentinel"));
    await w.say("after", { userId: u });
    await waitForText(u, (t) => t === "sentinel");
    expect(sentTo(u).filter((m) => m.plain_text === "echo: only once")).toHaveLength(1);
  });

  it("handles a burst in one chat strictly in order", async () => {
    const u = user();
    const texts = Array.from({ length: 8 }, (_, i) => `burst ${i}`);
    for (const t of texts) await w.say(t, { userId: u });
    await eventually(() => sentTo(u).length >= texts.length || undefined);
    expect(sentTo(u).map((m) => m.plain_text)).toEqual(texts.map((t) => `echo: ${t}`));
  });

  it("tells users who are not allowed their id once, stores nothing and calls no model", async () => {
    const stranger = 99887766;
    const before = w.gemini.requests.length;
    await w.say("let me in", { userId: stranger });
    const reply = await waitForText(stranger, (t) => t.includes("99887766"));
    expect(reply.plain_text).toContain("ALLOWED_USER_IDS=99887766");
    const again = await w.say("let me in!!", { userId: stranger });
    // Logged only when no reply is on its way.
    const logged = await eventually(() => w.service.logs.find((l) => l.update_id === again));
    expect(logged.msg).toBe("message from a user not on the allowlist, who was already told");
    expect(sentTo(stranger)).toHaveLength(1);
    expect(w.gemini.requests.length).toBe(before);
  });

  it("answers /history, /status, /compact and /clear without the chat model", async () => {
    const u = user();
    w.gemini.script(call("get_current_time"), text("It is *now*."));
    await w.say("what time is it?", { userId: u });
    await waitForText(u, (t) => t === "It is now.");
    const before = w.gemini.requests.length;

    await w.say("/history", { userId: u });
    const history = await waitForText(u, (t) => t.startsWith("You:"));
    expect(history.plain_text).toBe(
      "You: what time is it?\n✓ get_current_time {}\nKoroku: It is *now*.",
    );
    expect(validateTelegramHtml(history.text).ok).toBe(true);

    await w.say("/status", { userId: u });
    const statusReply = await waitForText(u, (t) => t.startsWith("Model:"));
    expect(statusReply.plain_text).toContain("Model: chat-model");
    expect(statusReply.plain_text).toMatch(/Context: 4 events, ~[\d,]+ tokens/);
    expect(statusReply.plain_text).toMatch(/Compaction budget left: \d+%/);
    expect(statusReply.plain_text).toContain("Compactions so far: 0");

    await w.say("/compact", { userId: u });
    await waitForText(u, (t) => t.startsWith("Nothing to compact"));
    expect(w.gemini.requests.length).toBe(before);

    await w.say("/clear", { userId: u });
    await waitForText(u, (t) => t.startsWith("🧹 Cleared"));
    await w.say("/history 5", { userId: u });
    await waitForText(u, (t) => t === "No conversation yet.");
    await w.say("/history abc", { userId: u });
    await waitForText(u, (t) => t.startsWith("Usage: /history"));
  });

  it("compacts on /compact and tells the user", async () => {
    const u = user();
    await w.say("first", { userId: u });
    await waitForText(u, (t) => t === "echo: first");
    await w.say("second", { userId: u });
    await waitForText(u, (t) => t === "echo: second");
    w.gemini.scriptFor("summary-model", text("They said first."));
    await w.say("/compact", { userId: u });
    await waitForText(u, (t) => t === "🧠 Compacted 2 earlier messages into a summary");
    await w.say("/status", { userId: u });
    await waitForText(u, (t) => t.includes("Compactions so far: 1"));
  });

  it("splits a long answer into valid chunks under 4096 characters", async () => {
    const u = user();
    const paragraph = "Lorem ipsum dolor sit amet, **consectetur** adipiscing elit & <more>. ";
    const code = `\`\`\`ts\n${"const x = a < b && c > d;\n".repeat(150)}\`\`\``;
    w.gemini.script(text(`${paragraph.repeat(60)}\n\n${code}\n\n${paragraph.repeat(40)}`));
    await w.say("long please", { userId: u });
    await eventually(() => sentTo(u).length >= 3 || undefined);
    for (const m of sentTo(u)) {
      const v = validateTelegramHtml(m.text);
      expect(v.ok).toBe(true);
      expect(m.plain_text.length).toBeLessThanOrEqual(4096);
    }
  });

  it("tells the user in plain words when Gemini fails, and the chat keeps working", async () => {
    const u = user();
    w.gemini.script(status(400, "Request contains an invalid argument."));
    await w.say("break", { userId: u });
    const told = await waitForText(u, (t) => t.startsWith("Gemini refused the request"));
    expect(told.plain_text).toBe(
      "Gemini refused the request: Request contains an invalid argument.\nI have set that message aside, so your next messages are answered without it. A file Gemini cannot read may go through in another form (a screenshot, a PDF export).",
    );
    w.gemini.script(status(403, "Permission denied: API key not valid."));
    await w.say("who am I", { userId: u });
    const denied = await waitForText(u, (t) => t.includes("Permission denied"));
    expect(denied.plain_text).toMatch(/\nThe bot's Gemini API key may be wrong or lack access/);
    await w.say("again", { userId: u });
    await waitForText(u, (t) => t === "echo: again");
  });

  it("answers a photo Telegram cannot give with what went wrong", async () => {
    const u = user();
    const id = w.nextUpdateId();
    const res = await w.post({
      update_id: id,
      message: {
        message_id: id,
        date: 1,
        chat: { id: u, type: "private" },
        from: { id: u, is_bot: false, first_name: "T" },
        photo: [{ file_id: "x", file_unique_id: "y", width: 1, height: 1 }],
      },
    });
    expect(res.status).toBe(200);
    await waitForText(u, (t) => t.startsWith("I could not fetch your photo from Telegram"));
    const edited = await w.post({
      update_id: w.nextUpdateId(),
      edited_message: { message_id: 1, date: 1, chat: { id: u, type: "private" }, text: "x" },
    });
    expect(edited.status).toBe(200);
  });
});
