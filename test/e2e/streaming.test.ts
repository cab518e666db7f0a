import { afterEach, describe, expect, it } from "vitest";
import { call, combine, type RecordedRequest, streamed, text, thought } from "../fakes/gemini.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

const ANSWER = Array.from({ length: 30 }, (_, i) => `Sentence number ${i + 1} of the answer.`).join(
  " ",
);
/** An answer in 40-odd chunks over about 2 s: long enough to watch, and to stop. */
const slowly = (value = ANSWER) => streamed(text(value), { chunkChars: 30, chunkDelayMs: 50 });
const GROUP = -4_000_001;

const sentTo = (w: ServiceWorld, chatId: number) =>
  w.telegram.sent.filter((m) => m.chat_id === chatId);
const draftsTo = (w: ServiceWorld, chatId: number) =>
  w.telegram.drafts.filter((d) => d.chat_id === chatId);
const callsOf = (w: ServiceWorld, method: string) =>
  w.telegram.calls.filter((c) => c.method === method);
const modelTexts = (r: RecordedRequest | undefined) =>
  (r?.body.contents ?? [])
    .filter((c) => c.role === "model")
    .map((c) => (c.parts ?? []).map((p) => p.text ?? "").join(""));

/** `/stop`, then "go on": the messages of the chat after that, and the request "go on" made. */
async function stopAndGoOn(w: ServiceWorld) {
  await w.say("/stop");
  await eventually(() => sentTo(w, ALLOWED_USER)[0]);
  w.gemini.script(text("continuing"));
  await w.say("go on");
  await eventually(() => sentTo(w, ALLOWED_USER).some((m) => m.plain_text === "continuing"));
  return {
    messages: sentTo(w, ALLOWED_USER).map((m) => m.plain_text),
    next: w.gemini.requests.at(-1),
  };
}

/**
 * The chat's messages once a next message is answered: the conversation runs in order, so
 * anything more the earlier turn would send comes before that answer.
 */
async function answeredNext(w: ServiceWorld): Promise<string[]> {
  w.gemini.script(text("noted"));
  await w.say("thanks");
  await eventually(() => sentTo(w, ALLOWED_USER).some((m) => m.plain_text === "noted"));
  return sentTo(w, ALLOWED_USER).map((m) => m.plain_text);
}

describe("answers shown while Gemini writes them", () => {
  let w: ServiceWorld;
  afterEach(async () => {
    expect(w.gemini.rejections).toEqual([]);
    await w.close();
  });

  it("private chat: a draft grows with the answer, says which tool runs, then one message", async () => {
    w = await startWorld();
    w.gemini.script(
      combine(
        thought("The user wants notes."),
        text("Let me look."),
        call("read_file", { path: "notes.txt" }),
      ),
      // Gemini takes a moment after the tool: the status stays up meanwhile.
      { ...slowly(), delayMs: 600 },
    );
    const updateId = await w.say("what is in my notes?");
    const final = await eventually(() => sentTo(w, ALLOWED_USER)[0]);
    expect(final.plain_text).toBe(ANSWER);
    const drafts = draftsTo(w, ALLOWED_USER);
    expect(drafts.some((d) => d.plain_text.includes("Reading notes.txt…"))).toBe(true);
    const answerDrafts = drafts.filter(
      (d) => ANSWER.startsWith(d.plain_text) && d.plain_text !== "",
    );
    expect(answerDrafts.length).toBeGreaterThan(3);
    // Growing, never showing the thought, all under one draft id with the stop button.
    expect(answerDrafts.map((d) => d.plain_text.length)).toEqual(
      answerDrafts.map((d) => d.plain_text.length).sort((a, b) => a - b),
    );
    expect(JSON.stringify(drafts)).not.toContain("The user wants notes");
    expect(new Set(drafts.map((d) => d.draft_id))).toEqual(new Set([updateId]));
    expect(callsOf(w, "sendMessageDraft").every((c) => c.body.can_stop === true)).toBe(true);
    // Nothing after the answer (a draft then would show it a second time), no 429, one message.
    const sentAt = callsOf(w, "sendMessage").at(-1)?.at ?? 0;
    expect(callsOf(w, "sendMessageDraft").every((c) => c.at <= sentAt)).toBe(true);
    expect(w.telegram.calls.filter((c) => c.response?.ok === false)).toEqual([]);
    expect(await answeredNext(w)).toEqual([ANSWER, "noted"]);
  });

  it("a group: one message sent early and edited in place; the last edit is the whole answer", async () => {
    w = await startWorld();
    w.gemini.script(slowly());
    await w.say(`@${w.telegram.bot.username} tell me`, { chatId: GROUP });
    await eventually(
      () => w.gemini.pendingSteps() === 0 && callsOf(w, "editMessageText").length > 0,
    );
    await eventually(() => sentTo(w, GROUP)[0]?.plain_text === ANSWER);
    expect(sentTo(w, GROUP)).toHaveLength(1);
    expect(callsOf(w, "sendMessageDraft")).toEqual([]);
    const edits = w.telegram.edits.filter((e) => e.chat_id === GROUP);
    expect(edits.length).toBeGreaterThan(0);
    expect(edits.at(-1)?.plain_text).toBe(ANSWER);
    expect(w.telegram.calls.filter((c) => c.response?.ok === false)).toEqual([]);
  });

  it("drafts refused in a private chat: it edits a message instead", async () => {
    w = await startWorld();
    w.telegram.failNext("sendMessageDraft", {
      error_code: 400,
      description: "Bad Request: message drafts are not available",
    });
    w.gemini.script(slowly());
    await w.say("hello");
    await eventually(() => sentTo(w, ALLOWED_USER)[0]?.plain_text === ANSWER);
    expect(callsOf(w, "sendMessageDraft")).toHaveLength(1);
    expect(callsOf(w, "editMessageText").length).toBeGreaterThan(0);
    expect(sentTo(w, ALLOWED_USER)).toHaveLength(1);
  });

  it("STREAMING=edit in a private chat: one message sent early and edited, no draft", async () => {
    w = await startWorld({ env: { STREAMING: "edit" } });
    w.gemini.script(slowly());
    await w.say("hello");
    await eventually(() => sentTo(w, ALLOWED_USER)[0]?.plain_text === ANSWER);
    const [first] = callsOf(w, "sendMessage");
    expect(first?.at).toBeLessThan(w.gemini.requests[0]?.streamEndedAt ?? 0);
    expect(callsOf(w, "editMessageText").length).toBeGreaterThan(0);
    expect(callsOf(w, "sendMessageDraft")).toEqual([]);
    expect(callsOf(w, "sendMessage")).toHaveLength(1);
  });

  it("STREAMING=draft in a group: nothing until the answer is done, then one message", async () => {
    w = await startWorld({ env: { STREAMING: "draft" } });
    w.gemini.script(slowly());
    await w.say(`@${w.telegram.bot.username} tell me`, { chatId: GROUP });
    const final = await eventually(() => sentTo(w, GROUP)[0]);
    expect(final.plain_text).toBe(ANSWER);
    const [sent, ...more] = callsOf(w, "sendMessage");
    expect(more).toEqual([]);
    expect(sent?.at).toBeGreaterThanOrEqual(w.gemini.requests[0]?.streamEndedAt ?? Infinity);
    expect(callsOf(w, "editMessageText")).toEqual([]);
    expect(callsOf(w, "sendMessageDraft")).toEqual([]);
  });

  for (const how of ["the stop button", "/stop"] as const) {
    it(`${how} ends the answer: what was written is kept, stored, and the next turn continues`, async () => {
      w = await startWorld();
      w.gemini.script(slowly());
      const updateId = await w.say("write a lot");
      await eventually(() => draftsTo(w, ALLOWED_USER).some((d) => d.plain_text.length > 60));
      if (how === "/stop") await w.say("/stop");
      else expect((await w.post(w.telegram.pressStop(ALLOWED_USER, updateId))).status).toBe(200);
      const kept = await eventually(() => sentTo(w, ALLOWED_USER)[0]);
      expect(kept.plain_text.length).toBeGreaterThan(60);
      expect(kept.plain_text.length).toBeLessThan(ANSWER.length);
      expect(ANSWER.startsWith(kept.plain_text)).toBe(true);
      expect(w.gemini.requests).toHaveLength(1);

      w.gemini.script(text("continuing"));
      await w.say("go on");
      await eventually(() => sentTo(w, ALLOWED_USER).some((m) => m.plain_text === "continuing"));
      const next = w.gemini.requests[1];
      // Stored as written (the message shows it rendered, without a trailing space).
      expect(modelTexts(next).map((t) => t.trimEnd())).toEqual([kept.plain_text]);
      expect(JSON.stringify(next?.body.contents)).not.toContain("/stop");
      expect(sentTo(w, ALLOWED_USER)).toHaveLength(2);
    });
  }

  it("/stop while the model thinks, before its first word: no answer, and the next turn goes on", async () => {
    w = await startWorld();
    w.gemini.script({ ...text("never shown"), delayMs: 5_000 });
    await w.say("think hard");
    await eventually(() => w.gemini.requests.length === 1);
    const { messages } = await stopAndGoOn(w);
    expect(messages).toEqual(["(stopped)", "continuing"]);
    expect(w.gemini.requests).toHaveLength(2);
  });

  it("/stop after a tool, before the next call wrote a word: the message keeps the words the draft showed", async () => {
    w = await startWorld();
    w.gemini.script(combine(text("Let me look."), call("read_file", { path: "notes.txt" })), {
      ...text("never shown"),
      delayMs: 5_000,
    });
    await w.say("what is in my notes?");
    await eventually(
      () =>
        w.gemini.requests.length === 2 &&
        draftsTo(w, ALLOWED_USER).some((d) => d.plain_text.includes("Reading notes.txt…")),
    );
    expect(draftsTo(w, ALLOWED_USER).at(-1)?.plain_text).toMatch(/^Let me look\.\s+Reading/);
    const { messages, next } = await stopAndGoOn(w);
    expect(messages).toEqual(["Let me look.", "continuing"]);
    // Stored once, with the call that followed them; the stopped answer adds no copy.
    expect(modelTexts(next)).toEqual(["Let me look.", "(stopped)"]);
  });

  it("killed in the middle of a stream: after the restart the answer comes once", async () => {
    w = await startWorld();
    w.gemini.script(slowly(), slowly());
    await w.say("write a lot");
    await eventually(() => draftsTo(w, ALLOWED_USER).length > 2);
    w.service.proc.kill("SIGKILL");
    await w.service.exited;
    w.service = await w.start();
    await eventually(() => sentTo(w, ALLOWED_USER)[0]?.plain_text === ANSWER, 20_000);
    expect(w.gemini.requests).toHaveLength(2);
    expect(await answeredNext(w)).toEqual([ANSWER, "noted"]);
  });

  it("a group killed in the middle of a stream: after the restart the message it was editing becomes the answer", async () => {
    w = await startWorld();
    w.gemini.script(slowly(), slowly());
    await w.say(`@${w.telegram.bot.username} write a lot`, { chatId: GROUP });
    // Edited once: the message it was first sent as is recorded by then.
    await eventually(() => w.telegram.edits.some((e) => e.chat_id === GROUP));
    w.service.proc.kill("SIGKILL");
    await w.service.exited;
    const [shown] = sentTo(w, GROUP);
    w.service = await w.start();
    await eventually(() => sentTo(w, GROUP)[0]?.plain_text === ANSWER, 20_000);
    await eventually(() => w.gemini.pendingSteps() === 0);
    expect(sentTo(w, GROUP).map((m) => m.message_id)).toEqual([shown?.message_id]);
    expect(callsOf(w, "sendMessage").filter((c) => c.body.chat_id === GROUP)).toHaveLength(1);
    expect(w.gemini.requests).toHaveLength(2);
  });
});
