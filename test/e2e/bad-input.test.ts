import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { FunctionResponse } from "@google/genai";
import SQLite from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CallSpec, calls, type RecordedRequest, text } from "../fakes/gemini.js";
import { buildTextUpdate, type SentMessage, validateTelegramHtml } from "../fakes/telegram.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
  WEBHOOK_SECRET,
} from "../helpers/service-process.js";
import { wordsOf } from "../helpers/stamps.js";
import { allowBuiltinTools } from "../helpers/tool-policies.js";

/**
 * The bad-input suite: every case runs in one service process, one after another, so a case that
 * poisoned the process, the database or the inbox would break the cases after it and the final
 * health check. After each case: the process is alive, the strict fake Gemini accepted every
 * request and every answer reached the fake Telegram as a valid message.
 */

const USERS = Array.from({ length: 20 }, (_, i) => ALLOWED_USER + 1 + i);
const GROUP = -100_555_000;
const TELEGRAM_LIMIT = 4096;

const lastUserText = (r: RecordedRequest | undefined) => wordsOf(r?.body.contents.at(-1)?.parts);

const echo = (r: RecordedRequest) => text(`echo: ${lastUserText(r)}`);

/** Every string in a value, object keys included: what a JSON body would carry. */
function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => [key, ...stringsIn(item)]);
  }
  return [];
}

const functionResponses = (r: RecordedRequest | undefined): FunctionResponse[] =>
  (r?.body.contents.at(-1)?.parts ?? []).flatMap((p) =>
    p.functionResponse ? [p.functionResponse] : [],
  );

/** A failed sendMessage is only acceptable when the next one to that chat is its plain-text retry. */
function unretriedSendFailures(w: ServiceWorld): string[] {
  const sends = w.telegram.calls.filter((c) => c.method === "sendMessage");
  return sends.flatMap((failed, index) => {
    if (failed.response?.ok !== false) return [];
    const retry = sends.slice(index + 1).find((c) => c.body.chat_id === failed.body.chat_id);
    const retried = retry?.response?.ok === true && retry.body.parse_mode === undefined;
    return retried ? [] : [`${failed.response.description}: ${JSON.stringify(failed.body)}`];
  });
}

/** POSTs the body in chunks without a content-length, the way a streaming client sends it. */
function postChunked(url: string, chunks: number, chunkBytes: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "transfer-encoding": "chunked",
        "x-telegram-bot-api-secret-token": WEBHOOK_SECRET,
      },
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    const write = (left: number) => {
      if (left === 0) {
        req.end();
        return;
      }
      const ok = req.write(Buffer.alloc(chunkBytes, " "));
      if (ok) write(left - 1);
      else req.once("drain", () => write(left - 1));
    };
    write(chunks);
  });
}

describe("bad input end to end (one world: no case poisons the process or another chat)", () => {
  let w: ServiceWorld;
  let db: SQLite.Database;
  let outside: string;
  let nextUser = 0;
  const user = () => USERS[nextUser++] as number;
  /** Chats whose history now holds odd things; the health check talks to them again. */
  const abused: number[] = [];
  const sentTo = (chatId: number) => w.telegram.sent.filter((m) => m.chat_id === chatId);
  const waitForText = (chatId: number, match: (t: string) => boolean, timeoutMs?: number) =>
    eventually(() => sentTo(chatId).find((m) => match(m.plain_text)), timeoutMs);
  const inboxRow = (updateId: number) =>
    db.prepare("select status from inbox where update_id = ?").get(updateId);
  const inboxSize = () => (db.prepare("select count(*) as n from inbox").get() as { n: number }).n;

  /** Sent as formatted HTML (not the plain-text fallback) that Telegram accepts. */
  const expectDeliverable = (m: SentMessage) => {
    expect(m.parse_mode).toBe("HTML");
    expect(validateTelegramHtml(m.text).ok).toBe(true);
    expect(m.plain_text.length).toBeLessThanOrEqual(TELEGRAM_LIMIT);
    expect(m.text.isWellFormed()).toBe(true);
  };

  beforeAll(async () => {
    w = await startWorld({
      env: { ALLOWED_USER_IDS: [ALLOWED_USER, ...USERS].join(","), ...allowBuiltinTools() },
    });
    w.gemini.setDefault(echo);
    db = new SQLite((w.db.target as { path: string }).path);
    db.pragma("busy_timeout = 5000");
    outside = mkdtempSync(join(tmpdir(), "koroku-outside-"));
  });

  afterEach(() => {
    expect(w.service.proc.exitCode).toBeNull();
    expect(w.gemini.rejections).toEqual([]);
    expect(unretriedSendFailures(w)).toEqual([]);
    expect(w.telegram.sent.filter((m) => !m.text.isWellFormed())).toEqual([]);
  });

  afterAll(async () => {
    db?.close();
    rmSync(outside, { recursive: true, force: true });
    await w?.close();
  });

  it("answers malformed bodies with 400, stores nothing and runs nothing", async () => {
    const geminiBefore = w.gemini.requests.length;
    const inboxBefore = inboxSize();
    const id = w.nextUpdateId();
    const message = {
      message_id: 1,
      date: 1,
      chat: { id: ALLOWED_USER, type: "private" },
      from: { id: ALLOWED_USER, is_bot: false, first_name: "T" },
      text: "hi",
    };
    const bodies = [
      "{not json",
      "",
      "null",
      "[]",
      "42",
      '"an update"',
      '{"update_id": 1',
      JSON.stringify({ update_id: "7" }),
      JSON.stringify({ update_id: -1 }),
      JSON.stringify({ update_id: 1.5 }),
      '{"update_id": 1e20}',
      "[".repeat(200_000),
      // Valid as an update, but nested far deeper than Telegram nests anything.
      `{"update_id":${id},"message":${JSON.stringify(message)},"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
    ];
    for (const raw of bodies) {
      const res = await w.post(undefined, { raw });
      expect(res.status, raw.slice(0, 80)).toBe(400);
      const body = (await res.json()) as { error?: unknown };
      expect(typeof body.error).toBe("string");
    }
    // Updates, by their numeric update_id, in shapes Telegram never sends: skipped with a 200
    // (a 400 only makes Telegram send them again), and the log names the odd field.
    const odd: [unknown, string][] = [
      [{ update_id: id, message: "hi" }, "message"],
      [{ update_id: id, message: { ...message, chat: undefined } }, "message.chat"],
      [
        { update_id: id, message: { ...message, chat: { id: "me", type: "x" } } },
        "message.chat.id",
      ],
      [{ update_id: id, message: { ...message, text: 42 } }, "message.text"],
      [
        { update_id: id, message: { ...message, from: { id: ALLOWED_USER } } },
        "message.from.is_bot",
      ],
      [
        { update_id: id, message: { ...message, reply_to_message: null } },
        "message.reply_to_message",
      ],
      [{ update_id: id, message: { ...message, entities: [null] } }, "message.entities.0"],
    ];
    for (const [body, field] of odd) {
      const res = await w.post(body);
      expect(res.status, field).toBe(200);
      await eventually(() =>
        w.service.logs.find(
          (l) =>
            l.msg === "skipping an update in a shape Telegram does not send" && l.field === field,
        ),
      );
    }
    const get = await fetch(`${w.service.baseUrl}/telegram/webhook`);
    expect(get.status).toBe(405);
    expect(inboxSize()).toBe(inboxBefore);
    expect(w.gemini.requests.length).toBe(geminiBefore);
    expect(sentTo(ALLOWED_USER)).toEqual([]);
  });

  it("caps the webhook body size: 413 whether the size is declared or streamed", async () => {
    const inboxBefore = inboxSize();
    const declared = await w.post(undefined, { raw: `{"pad":"${"x".repeat(2 * 1024 * 1024)}"}` });
    expect(declared.status).toBe(413);
    expect(await postChunked(`${w.service.baseUrl}/telegram/webhook`, 40, 64 * 1024)).toBe(413);
    expect(inboxSize()).toBe(inboxBefore);
    // The listener still takes ordinary requests afterwards.
    const u = user();
    await w.say("after the big bodies", { userId: u });
    await waitForText(u, (t) => t === "echo: after the big bodies");
  });

  it("skips unknown update types and updates without a sender, with 200 and nothing stored", async () => {
    const u = user();
    const geminiBefore = w.gemini.requests.length;
    const chat = { id: u, type: "private", first_name: "T" };
    const from = { id: u, is_bot: false, first_name: "T" };
    const updates: Record<string, unknown>[] = [
      { callback_query: { id: "1", from, chat_instance: "c", data: "x" } },
      { inline_query: { id: "2", from, query: "q", offset: "" } },
      { poll: { id: "3", question: "?", options: [], total_voter_count: 0, is_closed: false } },
      {
        my_chat_member: {
          chat,
          from,
          date: 1,
          old_chat_member: { status: "member", user: from },
          new_chat_member: { status: "kicked", user: from, until_date: 0 },
        },
      },
      { channel_post: { message_id: 1, date: 1, chat: { id: -1001, type: "channel" }, text: "x" } },
      { edited_message: { message_id: 1, date: 1, chat, from, edit_date: 2, text: "edited" } },
      { some_future_update_type: { anything: [1, 2, 3] } },
      { message: { message_id: 1, date: 1, chat, text: "no from at all" } },
      {
        message: {
          message_id: 2,
          date: 1,
          chat: { id: GROUP, type: "supergroup", title: "G" },
          sender_chat: { id: GROUP, type: "supergroup", title: "G" },
          text: "@koroku_test_bot sent as the group",
          entities: [{ type: "mention", offset: 0, length: 16 }],
        },
      },
      { message: { message_id: 3, date: 1, chat, from: { ...from, is_bot: true }, text: "bot" } },
    ];
    for (const update of updates) {
      const updateId = w.nextUpdateId();
      const res = await w.post({ update_id: updateId, ...update });
      expect(res.status, JSON.stringify(update)).toBe(200);
      expect(inboxRow(updateId), JSON.stringify(update)).toBeUndefined();
    }
    // A message smuggled in as "__proto__" is not a message.
    const smuggled = w.nextUpdateId();
    const message = { message_id: 4, date: 1, chat, from, text: "via the prototype" };
    const raw = `{"update_id":${smuggled},"__proto__":${JSON.stringify({ message })}}`;
    expect((await w.post(undefined, { raw })).status).toBe(200);
    expect(inboxRow(smuggled)).toBeUndefined();
    expect(w.gemini.requests.length).toBe(geminiBefore);
    expect(sentTo(u)).toEqual([]);
    expect(sentTo(GROUP)).toEqual([]);
  });

  it("passes a 10,000-character message to Gemini whole and splits a 10,000-character answer", async () => {
    const u = user();
    const words = Array.from({ length: 2000 }, (_, i) => `w${i % 1000}`).join(" ");
    const question = words.padEnd(10_000, "!").slice(0, 10_000);
    expect(question).toHaveLength(10_000);
    const answer = `${Array.from({ length: 1300 }, (_, i) => `answer${i % 10}`)
      .join(" ")
      .slice(0, 9_999)}.`;
    expect(answer).toHaveLength(10_000);
    let received = "";
    w.gemini.script((r) => {
      received = lastUserText(r);
      return text(answer);
    });
    await w.say(question, { userId: u });
    await waitForText(u, (t) => t.endsWith("."));
    expect(received).toBe(question);
    const chunks = sentTo(u);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    for (const m of chunks) expectDeliverable(m);
    // Chunks are cut at spaces, which the cut drops.
    expect(chunks.map((m) => m.plain_text).join(" ") === answer).toBe(true);
  });

  it("keeps control characters out of harm's way in both directions", async () => {
    const u = user();
    const question =
      "nul\u0000 bell\u0007 esc\u001b[31mred\u001b[0m tab\t del\u007f c1\u0085 zwsp\u200b bom\ufeff end";
    let received = "";
    w.gemini.script((r) => {
      received = lastUserText(r);
      return text(`got: ${received}`);
    });
    await w.say(question, { userId: u });
    const reply = await waitForText(u, (t) => t.startsWith("got:"));
    expect(received).toBe(question);
    expectDeliverable(reply);
    // CommonMark turns NUL into U+FFFD; the rest arrives as sent.
    expect(reply.plain_text).toBe(`got: ${question.replace("\u0000", "\ufffd")}`);
  });

  it("makes lone surrogates well-formed before Gemini and Telegram see them", async () => {
    const u = user();
    const update = buildTextUpdate({
      updateId: w.nextUpdateId(),
      messageId: 1,
      text: "lone HIGH and LOW, pair 😀",
      userId: u,
    });
    // JSON can carry a lone surrogate as an escape; Telegram's JSON may do so.
    const raw = JSON.stringify(update).replace("HIGH", "\\ud800").replace("LOW", "\\udfff");
    expect(raw).toContain("\\ud800");
    let request: RecordedRequest | undefined;
    w.gemini.script((r) => {
      request = r;
      return text("broken \ud800 answer, fine 😀");
    });
    expect((await w.post(undefined, { raw })).status).toBe(200);
    const reply = await waitForText(u, (t) => t.startsWith("broken"));
    expect(lastUserText(request)).toBe("lone \ufffd and \ufffd, pair 😀");
    expect(stringsIn(request?.body).every((s) => s.isWellFormed())).toBe(true);
    expectDeliverable(reply);
    expect(reply.plain_text).toBe("broken \ufffd answer, fine 😀");

    // In a group the sender's name goes to the model too.
    const name = "Ann\ud800";
    let groupRequest: RecordedRequest | undefined;
    w.gemini.script((r) => {
      groupRequest = r;
      return text("hello group");
    });
    const res = await w.post({
      update_id: w.nextUpdateId(),
      message: {
        message_id: 2,
        date: 1,
        chat: { id: GROUP, type: "supergroup", title: "G" },
        from: { id: u, is_bot: false, first_name: name },
        text: "@koroku_test_bot hi \udc00",
        entities: [{ type: "mention", offset: 0, length: 16 }],
      },
    });
    expect(res.status).toBe(200);
    await waitForText(GROUP, (t) => t === "hello group");
    expect(lastUserText(groupRequest)).toBe("[Ann\ufffd] hi \ufffd");
    expect(stringsIn(groupRequest?.body).every((s) => s.isWellFormed())).toBe(true);
  });

  it("carries emoji and right-to-left text unchanged, and never splits a surrogate pair", async () => {
    const u = user();
    const question =
      "שלום עולם 👋🏽 مرحبا بالعالم 👨‍👩‍👧‍👦 🇯🇵 e\u0301 \u202eevil.exe\u202c \u2067isolate\u2069 ok";
    await w.say(question, { userId: u });
    const reply = await waitForText(u, (t) => t.startsWith("echo:"));
    expect(lastUserText(w.gemini.requests.at(-1))).toBe(question);
    expectDeliverable(reply);
    expect(reply.plain_text).toBe(`echo: ${question}`);

    const emoji = "😀".repeat(5000);
    w.gemini.script(text(emoji));
    await w.say("emoji wall please", { userId: u });
    const wallText = () =>
      sentTo(u)
        .slice(1)
        .map((m) => m.plain_text)
        .join("");
    await eventually(() => wallText().length >= emoji.length);
    const wall = sentTo(u).slice(1);
    expect(wall.length).toBeGreaterThanOrEqual(3);
    for (const m of wall) expectDeliverable(m);
    expect(wallText() === emoji).toBe(true);
  });

  it("renders Markdown that breaks naive renderers into valid, safe Telegram HTML", async () => {
    const u = user();
    const nasty = [
      "***bold italic** just italic* **unclosed _mixed*_ ~~strike **bold~~ end** `code *not em*",
      "<b>not bold</b> </i> <script>alert(1)</script> <img src=x onerror=alert(1)> &amp; &#0; &#xD800; & a<b",
      '[js](javascript:alert("x")) [quoted](https://example.com/?a="b"&c=\'d\') <javascript:alert(1)>',
      '[title](https://example.com "a \\"quoted\\" title") [data](data:text/html,<script>x</script>)',
      '![img "q"](javascript:x) [outer [inner](https://inner.example) text](https://outer.example)',
      '```js"onload="x\nconst a = b < c && d > e;\n```',
      "> > > > quote in a quote in a quote",
      "| a | <b> |\n|---|---|\n| `x|y` | **z** |",
      "# \n## ** **\n[](https://empty.example)",
    ].join("\n\n");
    w.gemini.script(text(nasty));
    await w.say("be nasty", { userId: u });
    const reply = await waitForText(u, (t) => t.includes("not bold"));
    expectDeliverable(reply);
    expect(reply.plain_text).toContain("<b>not bold</b>");
    expect(reply.plain_text).toContain("<script>alert(1)</script>");
    expect(reply.plain_text).toContain('[js](javascript:alert("x"))');
    expect(reply.plain_text).toContain("const a = b < c && d > e;");
    expect(reply.plain_text).toContain("quote in a quote in a quote");
    const links = (reply.message.entities ?? []).flatMap((e) =>
      e.type === "text_link" ? [e.url] : [],
    );
    expect(links.length).toBeGreaterThan(0);
    for (const url of links) expect(url).toMatch(/^(?:https?|tg|mailto):/);
    expect(links).toContain("https://inner.example");
    expect(links).not.toContain("https://outer.example");
  });

  it("keeps every word of deeply nested lists and quotes", async () => {
    const u = user();
    const list = Array.from({ length: 40 }, (_, i) => `${"  ".repeat(i)}- item ${i}`).join("\n");
    const quotes = Array.from({ length: 40 }, (_, i) => `${"> ".repeat(i + 1)}quote ${i}`).join(
      "\n",
    );
    w.gemini.script(text(`${list}\n\nafter the list\n\n${quotes}\n\nthe end`));
    await w.say("nest deeply", { userId: u });
    await waitForText(u, (t) => t.endsWith("the end"));
    for (const m of sentTo(u)) expectDeliverable(m);
    const seen = sentTo(u)
      .map((m) => m.plain_text)
      .join("\n");
    for (let i = 0; i < 40; i++) {
      expect(seen).toMatch(new RegExp(`item ${i}$`, "m"));
      expect(seen).toMatch(new RegExp(`quote ${i}$`, "m"));
    }
    expect(seen).toContain("after the list");
  });

  it("delivers a 5,000-line code block as valid code chunks with every line", async () => {
    const u = user();
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i}: if (a < b && c > d) {}`);
    w.gemini.script(text(`Here:\n\n\`\`\`ts\n${lines.join("\n")}\n\`\`\`\n\nDone.`));
    await w.say("a long listing", { userId: u });
    await waitForText(u, (t) => t.endsWith("Done."));
    const sent = sentTo(u);
    expect(sent.length).toBeGreaterThan(30);
    for (const m of sent) {
      expectDeliverable(m);
      // Every chunk is code again: the cut closes <pre> and the next chunk reopens it.
      expect(m.message.entities?.find((e) => e.type === "pre")).toMatchObject({ language: "ts" });
    }
    // The chunks are cut at line ends, which the cut drops.
    const joined = sent.map((m) => m.plain_text).join("\n");
    expect(joined === `Here:\n\n${lines.join("\n")}\n\nDone.`).toBe(true);
  });

  it("answers tool calls with arguments of the wrong type with errors the model can read", async () => {
    const u = user();
    const bad: CallSpec[] = [
      { name: "read_file", args: { path: 42 } },
      { name: "read_file", args: { path: null } },
      { name: "read_file", args: {} },
      { name: "write_file", args: { path: "notes.txt" } },
      { name: "write_file", args: { path: "notes.txt", content: { text: "x" } } },
      { name: "list_files", args: { path: ["a", "b"] } },
      { name: "search_history", args: { query: "x", limit: "ten" } },
      { name: "search_history", args: { query: "   " } },
      { name: "read_memory", args: { date: "2025-01-01" } },
      { name: "no_such_tool", args: { path: "x" } },
    ];
    abused.push(u);
    const before = w.gemini.requests.length;
    w.gemini.script(calls(bad), text("I could not use those tools."));
    await w.say("use the tools badly", { userId: u });
    const reply = await waitForText(u, (t) => t === "I could not use those tools.");
    expectDeliverable(reply);
    const responses = functionResponses(w.gemini.requests[before + 1]);
    expect(responses.map((r) => r.name)).toEqual(bad.map((c) => c.name));
    for (const r of responses) {
      expect(Object.keys(r.response ?? {}), JSON.stringify(r)).toEqual(["error"]);
      expect(typeof r.response?.error).toBe("string");
    }
    const errors = responses.map((r) => String(r.response?.error));
    expect(errors[0]).toMatch(/^invalid arguments for read_file: path: /);
    expect(errors[3]).toMatch(/content/);
    expect(errors[6]).toMatch(/limit/);
    expect(errors[8]).toMatch(/dd-mm-yyyy/);
    expect(errors[9]).toMatch(/unknown tool "no_such_tool"; available: .*read_file/);
    expect(existsSync(join(w.env.WORKSPACE_DIR as string, `private-${u}`, "notes.txt"))).toBe(
      false,
    );
  });

  it("refuses paths that escape the workspace and leaks nothing from outside", async () => {
    const u = user();
    const workspace = w.env.WORKSPACE_DIR as string;
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(outside, "secret.txt"), "TOP SECRET OUTSIDE");
    // The user's own folder: the tools of their private chat work there.
    const own = join(workspace, `private-${u}`);
    mkdirSync(own, { recursive: true });
    symlinkSync(outside, join(own, "outside-link"));
    const escaping: CallSpec[] = [
      { name: "read_file", args: { path: "../../../../../etc/passwd" } },
      { name: "read_file", args: { path: "/etc/passwd" } },
      { name: "list_files", args: { path: ".." } },
      { name: "write_file", args: { path: "../escaped.txt", content: "pwned" } },
      { name: "write_file", args: { path: "sub/../../escaped.txt", content: "pwned" } },
      { name: "read_file", args: { path: "outside-link/secret.txt" } },
      { name: "list_files", args: { path: "outside-link" } },
      { name: "write_file", args: { path: "outside-link/planted.txt", content: "pwned" } },
      { name: "read_file", args: { path: "nul\u0000byte.txt" } },
    ];
    abused.push(u);
    const before = w.gemini.requests.length;
    w.gemini.script(calls(escaping), text("Those paths are off limits."));
    await w.say("read outside the workspace", { userId: u });
    const reply = await waitForText(u, (t) => t === "Those paths are off limits.");
    expectDeliverable(reply);
    const responses = functionResponses(w.gemini.requests[before + 1]);
    expect(responses).toHaveLength(escaping.length);
    for (const r of responses) {
      expect(String(r.response?.error), JSON.stringify(r)).toMatch(
        /leaves the workspace|is absolute|symlink that points outside|NUL byte/,
      );
    }
    const seen = JSON.stringify(w.gemini.requests.slice(before));
    expect(seen).not.toContain("TOP SECRET");
    expect(seen).not.toContain("root:");
    expect(existsSync(join(dirname(workspace), "escaped.txt"))).toBe(false);
    expect(existsSync(join(workspace, "escaped.txt"))).toBe(false);
    expect(existsSync(join(outside, "planted.txt"))).toBe(false);
  });

  it("skips a corrupted event_json row with a warning naming it, and the chat keeps answering", async () => {
    const u = user();
    abused.push(u);
    const chatId = String(u);
    await w.say("first", { userId: u });
    await waitForText(u, (t) => t === "echo: first");
    const insert = db.prepare(
      "insert into messages (chat_id, kind, role, event_json, created_at) values (?, ?, ?, ?, ?)",
    );
    const now = new Date().toISOString();
    const compaction = { v: 1, event_type: "compaction", summary: [], summarized_events: 0 };
    const bad = [
      insert.run(chatId, "session", "user", "{not json", now),
      insert.run(
        chatId,
        "session",
        "wizard",
        '{"v":1,"event_type":"session","role":"wizard"}',
        now,
      ),
      insert.run(chatId, "session", "user", JSON.stringify(compaction), now),
      insert.run(chatId, "session", "user", "null", now),
    ].map((r) => Number(r.lastInsertRowid));

    await w.say("second", { userId: u });
    await waitForText(u, (t) => t === "echo: second");
    const contents = w.gemini.requests.at(-1)?.body.contents ?? [];
    expect(contents.map((c) => c.role)).toEqual(["user", "model", "user"]);
    // Each bad row is skipped with a warning of its own. The lines come through the service's
    // stdout, which may be read after the answer.
    const warned = (id: number) =>
      w.service.logs.some(
        (l) =>
          l.msg === "skipping a stored event that fails validation" &&
          l.message_id === id &&
          l.chat_id === chatId,
      );
    await eventually(() => bad.every(warned));

    await w.say("/history", { userId: u });
    const history = await waitForText(u, (t) => t.startsWith("You:"));
    expect(history.plain_text).toBe(
      "You: first\nKoroku: echo: first\nYou: second\nKoroku: echo: second",
    );
  });

  it("lets another chat's running turn finish while bad input arrives", async () => {
    const busy = user();
    const other = user();
    w.gemini.script({ ...text("slow but sure"), delayMs: 300 });
    const before = w.gemini.requests.length;
    await w.say("take your time", { userId: busy });
    await eventually(() => w.gemini.requests.length > before);
    const statuses = await Promise.all([
      w.post(undefined, { raw: "{not json" }),
      w.post(undefined, { raw: "x".repeat(2 * 1024 * 1024) }),
      w.post({ update_id: w.nextUpdateId(), poll: { id: "p" } }),
      w.post(undefined, {
        raw: JSON.stringify(
          buildTextUpdate({
            updateId: w.nextUpdateId(),
            messageId: 1,
            text: "MEANWHILE",
            userId: other,
          }),
        ).replace("MEANWHILE", "meanwhile \\ud800"),
      }),
    ]);
    expect(statuses.map((r) => r.status)).toEqual([400, 413, 200, 200]);
    await waitForText(busy, (t) => t === "slow but sure");
    await waitForText(other, (t) => t === "echo: meanwhile \ufffd");
  });

  it("is still healthy: alive, answering /healthz, and other chats get answers", async () => {
    const res = await fetch(`${w.service.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    const u = user();
    await w.say("are you still there?", { userId: u });
    const reply = await waitForText(u, (t) => t === "echo: are you still there?");
    expectDeliverable(reply);
    // Chats holding failed tool calls and corrupted rows go on too.
    for (const chat of abused) {
      await w.say("still with me?", { userId: chat });
      await waitForText(chat, (t) => t === "echo: still with me?");
    }
    expect(w.service.logs.filter((l) => Number(l.level) >= 60)).toEqual([]);
    expect(w.service.proc.exitCode).toBeNull();
  });
});

// Its own world: the main suite runs on SQLite, and this case fails only on PostgreSQL, where a
// text column cannot hold U+0000.
describe("bad input on PostgreSQL", () => {
  it("answers a message that contains a NUL character", async () => {
    const w = await startWorld({ kind: "postgres" });
    try {
      w.gemini.setDefault(echo);
      await w.say("nul \u0000 here");
      const reply = await eventually(() => w.telegram.sent[0]);
      expect(reply.plain_text).toBe("echo: nul \ufffd here");
      expect(w.gemini.rejections).toEqual([]);
      expect(w.service.proc.exitCode).toBeNull();
    } finally {
      await w.close();
    }
  });
});
