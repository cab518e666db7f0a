import type { Message, Update } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { OggOpusEncoder } from "../../src/voice/ogg-opus.js";
import { MAX_PART_CHARS, speechParts, spokenText } from "../../src/voice/spoken-text.js";
import { call, hang, SECONDS_PER_CHAR, speechStep, status, text } from "../fakes/gemini.js";
import { checkOggOpus } from "../fakes/ogg-opus-check.js";
import { buildTextUpdate } from "../fakes/telegram-objects.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import {
  ALLOWED_USER,
  eventually,
  type ServiceWorld,
  startWorld,
} from "../helpers/service-process.js";

const TTS_MODEL = "gemini-3.8-flash-tts";
const RECORDING = "🎙 recording…";
const FORUM = -1005550021;
const GROUP = -4005550022;
const MENTION = "@koroku_test_bot";

/** A second of a real Ogg Opus voice note, as Telegram would hold the user's. */
function userVoiceBytes(): Buffer {
  const encoder = new OggOpusEncoder();
  encoder.write(Buffer.alloc(24_000 * 2, 1));
  return encoder.finish().bytes;
}

/**
 * A voice note from the allowed user: in their private chat, or in a group (addressed to the bot
 * by a mention in its caption), or in a topic of either.
 */
async function sendVoiceNote(
  w: ServiceWorld,
  where: { chatId?: number; threadId?: number } = {},
): Promise<number> {
  const id = w.nextUpdateId();
  const file = w.telegram.addFile(userVoiceBytes());
  const base = buildTextUpdate({ updateId: id, messageId: id, text: "", ...where });
  const { text: _text, ...message } = base.message as Message & { text: string };
  const caption =
    message.chat.type === "private"
      ? {}
      : {
          caption: MENTION,
          caption_entities: [{ type: "mention" as const, offset: 0, length: MENTION.length }],
        };
  const update = {
    update_id: id,
    message: { ...message, ...caption, voice: { ...file, duration: 1, mime_type: "audio/ogg" } },
  } as Update;
  const res = await w.post(update);
  expect(res.status).toBe(200);
  return id;
}

/** The speech model takes its time with the next request: until the returned function is called. */
function holdSpeech(w: ServiceWorld): () => void {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  w.gemini.scriptFor(TTS_MODEL, async (request) => {
    await opened;
    return speechStep(request);
  });
  return open;
}

const callsOf = (w: ServiceWorld, method: string, chatId: number) =>
  w.telegram.calls.filter(
    (c) => c.method === method && Number(c.body.chat_id) === chatId && c.response?.ok,
  );
const voicesTo = (w: ServiceWorld) => w.telegram.sentFiles.filter((f) => f.method === "sendVoice");
const textsTo = (w: ServiceWorld) =>
  w.telegram.sent.filter((m) => m.chat_id === ALLOWED_USER).map((m) => m.plain_text);
const ttsRequests = (w: ServiceWorld) => w.gemini.requests.filter((r) => r.model === TTS_MODEL);

describe.each(DATABASE_KINDS)("voice replies on %s", (kind) => {
  let w: ServiceWorld;
  afterEach(async () => {
    await w?.close();
  });

  it("answers a voice note with its text and a voice note of it, kept in /history", async () => {
    w = await startWorld({ kind });
    // The voice list was read at start, to check GEMINI_VOICE.
    expect(w.gemini.voiceListReads).toBe(1);
    w.gemini.scriptFor(
      "chat-model",
      text(
        "Sure. Here is **the plan**: see [the docs](https://example.com/docs).\n\n```\nnpm ci\n```",
      ),
    );
    await sendVoiceNote(w);
    const [voice] = await eventually(() => voicesTo(w).length === 1 && voicesTo(w));
    expect(textsTo(w)).toContain("Sure. Here is the plan: see the docs.\n\nnpm ci");
    // What was spoken: the words, no code, the link by its words.
    const spoken = ttsRequests(w)[0]?.body.contents[0]?.parts?.[0]?.text;
    expect(spoken).toBe("Sure. Here is the plan: see the docs.\n\n(The code is in the message.)");
    expect(ttsRequests(w)[0]?.body.generationConfig).toMatchObject({
      responseModalities: ["AUDIO"],
      speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: "Kore" } } },
    });
    const info = checkOggOpus(voice?.bytes ?? Buffer.alloc(0));
    expect(info).toMatchObject({ channels: 1, inputSampleRate: 24_000 });
    const seconds = (spoken?.length ?? 0) * SECONDS_PER_CHAR;
    expect("seconds" in info && info.seconds).toBeCloseTo(seconds, 1);
    expect(voice?.message.voice?.duration).toBe(Math.max(1, Math.round(seconds)));
    // Kept with the answer: /history shows the voice note with what it said.
    await w.say("/history 1");
    const history = await eventually(() => textsTo(w).find((t) => t.includes("Koroku:")));
    expect(history).toContain("🎤");
    expect(history).toContain("«Sure. Here is the plan: see the docs.");
    // Never sent back to Gemini: the next request holds the answer's words, no audio of it.
    w.gemini.scriptFor("chat-model", text("and then"));
    await w.say("next?");
    await eventually(() => textsTo(w).includes("and then"));
    const last = w.gemini.requests.filter((r) => r.model === "chat-model").at(-1);
    const audio = (last?.body.contents ?? [])
      .filter((c) => c.role === "model")
      .flatMap((c) => c.parts ?? [])
      .filter((p) => p.inlineData);
    expect(audio).toEqual([]);
    // Text got text only.
    expect(voicesTo(w)).toHaveLength(1);
    expect(w.gemini.rejections).toEqual([]);
  });

  it("/voice off answers a voice note in text; /voice on speaks to text too", async () => {
    w = await startWorld({ kind });
    await w.say("/voice off");
    await eventually(() => textsTo(w).some((t) => t.startsWith("Voice replies are off")));
    w.gemini.scriptFor("chat-model", text("text only"));
    await sendVoiceNote(w);
    await eventually(() => textsTo(w).includes("text only"));
    w.gemini.scriptFor("chat-model", text("now spoken"));
    await w.say("/voice on");
    await eventually(() => textsTo(w).some((t) => t.startsWith("Voice replies are on")));
    await w.say("hello");
    await eventually(() => voicesTo(w).length === 1);
    expect(textsTo(w)).toContain("now spoken");
    expect(ttsRequests(w)).toHaveLength(1);
    expect(ttsRequests(w)[0]?.body.contents[0]?.parts?.[0]?.text).toBe("now spoken");
  });

  it("speaks the answer that goes on after a tool of a voice note's turn was allowed, and not a typed one's", async () => {
    w = await startWorld({ kind });
    /** Presses Allow once on the `nth` request to run write_file (counting from 1). */
    const allowOnce = async (nth: number) => {
      const prompt = await eventually(
        () =>
          w.telegram.sent.filter((m) =>
            m.plain_text.startsWith("🔐 Koroku wants to run write_file"),
          )[nth - 1],
      );
      const once = (prompt.message.reply_markup?.inline_keyboard.flat() ?? [])
        .map((b) => ("callback_data" in b ? String(b.callback_data) : ""))
        .find((data) => data.endsWith(":once")) as string;
      const press = w.telegram.pressButton(ALLOWED_USER, prompt.message_id, once, ALLOWED_USER);
      expect((await w.post({ ...press, update_id: w.nextUpdateId() })).status).toBe(200);
    };
    w.gemini.scriptFor(
      "chat-model",
      call("write_file", { path: "typed.txt", content: "A" }),
      text("typed and written"),
    );
    await w.say("write a file");
    await allowOnce(1);
    await eventually(() => textsTo(w).includes("typed and written"));

    w.gemini.scriptFor(
      "chat-model",
      call("write_file", { path: "spoken.txt", content: "B" }),
      text("spoken and written"),
    );
    await sendVoiceNote(w);
    await allowOnce(2);
    await eventually(() => voicesTo(w).length === 1);
    expect(textsTo(w)).toContain("spoken and written");
    expect(ttsRequests(w).map((r) => r.body.contents[0]?.parts?.[0]?.text)).toEqual([
      "spoken and written",
    ]);
  });

  it("speaks a long answer in parts, in order, each as it is ready, in the topic", async () => {
    w = await startWorld({
      kind,
      env: { VOICE_REPLIES: "always" },
      telegram: { topicsInPrivateChats: true },
    });
    const paragraphs = Array.from(
      { length: 5 },
      (_, i) => `Paragraph ${i + 1}. ${"This sentence fills the paragraph. ".repeat(14).trim()}`,
    );
    w.gemini.scriptFor("chat-model", text(paragraphs.join("\n\n")));
    await w.say("tell me a lot", { threadId: 77 });
    const answer = paragraphs.join("\n\n");
    const expected = speechParts(spokenText(answer)).length;
    expect(expected).toBeGreaterThanOrEqual(3);
    const voices = await eventually(() => voicesTo(w).length === expected && voicesTo(w), 20_000);
    const spoken = ttsRequests(w).map((r) => r.body.contents[0]?.parts?.[0]?.text ?? "");
    expect(spoken).toHaveLength(expected);
    expect(spoken.every((s) => s.length <= MAX_PART_CHARS)).toBe(true);
    const words = (s: string) => s.replace(/\s+/g, " ").trim();
    expect(words(spoken.join(" "))).toBe(words(answer));
    for (const [i, voice] of voices.entries()) {
      expect(voice.message_thread_id).toBe(77);
      const info = checkOggOpus(voice.bytes);
      expect("seconds" in info && info.seconds).toBeCloseTo(
        (spoken[i]?.length ?? 0) * SECONDS_PER_CHAR,
        1,
      );
    }
  });

  it("a speech failure still gives the text, and says so once", async () => {
    w = await startWorld({ kind });
    w.gemini.scriptFor("chat-model", text("The answer in words."));
    w.gemini.scriptFor(TTS_MODEL, status(400, "Voice synthesis is not available for this text."));
    await sendVoiceNote(w);
    const notice = await eventually(() => textsTo(w).find((t) => t.startsWith("🎙")));
    expect(notice).toContain("could not record this answer as a voice note");
    expect(textsTo(w)).toContain("The answer in words.");
    expect(voicesTo(w)).toEqual([]);
    expect(textsTo(w).filter((t) => t.startsWith("🎙"))).toHaveLength(1);
  });

  it.each([
    ["/stop", (w: ServiceWorld) => w.say("/stop")],
    [
      "the stop button of the 🎙 draft",
      (w: ServiceWorld, updateId: number) => w.post(w.telegram.pressStop(ALLOWED_USER, updateId)),
    ],
  ] as const)(
    "%s ends the speaking: no voice note, no notice, and the chat goes on",
    async (_, stop) => {
      w = await startWorld({ kind });
      w.gemini.scriptFor("chat-model", text("Words first."));
      w.gemini.scriptFor(TTS_MODEL, hang());
      const updateId = await sendVoiceNote(w);
      await eventually(() => ttsRequests(w).length === 1);
      await eventually(() =>
        w.telegram.drafts.some((d) => d.chat_id === ALLOWED_USER && d.plain_text === RECORDING),
      );
      expect(textsTo(w)).toContain("Words first.");
      await stop(w, updateId);
      w.gemini.scriptFor("chat-model", text("still here"));
      await w.say("/voice off");
      await w.say("are you there?");
      await eventually(() => textsTo(w).includes("still here"));
      expect(voicesTo(w)).toEqual([]);
      expect(textsTo(w).some((t) => t.startsWith("🎙"))).toBe(false);
      expect(textsTo(w)).not.toContain("There is no answer being written to stop.");
    },
  );

  it("shows 🎙 recording… in the live answer after the words, and the voice note takes its place", async () => {
    w = await startWorld({ kind });
    w.gemini.scriptFor("chat-model", text("Here you are."));
    const open = holdSpeech(w);
    const updateId = await sendVoiceNote(w);
    const [answer] = await eventually(() => {
      const sent = callsOf(w, "sendMessage", ALLOWED_USER);
      return sent.length === 1 && sent;
    });
    const status = await eventually(() =>
      w.telegram.drafts.find((d) => d.chat_id === ALLOWED_USER && d.plain_text === RECORDING),
    );
    // After the answer's words, as a draft of the update's own id: its stop button stops it.
    expect(status.at).toBeGreaterThanOrEqual(answer?.at ?? Infinity);
    expect(status.draft_id).toBe(updateId);
    expect(voicesTo(w)).toEqual([]);
    open();
    await eventually(() => voicesTo(w).length === 1);
    const [voice] = callsOf(w, "sendVoice", ALLOWED_USER);
    // No status drafted after the voice note: nothing left saying it is being recorded.
    expect(w.telegram.drafts.every((d) => d.at <= (voice?.at ?? 0))).toBe(true);
    expect(textsTo(w)).toEqual(["Here you are."]);
  });

  it("a voice note in a forum topic: the answer says 🎙 recording… until the voice note is out in that topic", async () => {
    w = await startWorld({ kind });
    w.gemini.scriptFor("chat-model", text("Here you are."));
    const open = holdSpeech(w);
    await sendVoiceNote(w, { chatId: FORUM, threadId: 77 });
    // Groups are shown one message edited in place: the status below the answer's words.
    const shown = await eventually(() =>
      w.telegram.sent.find(
        (m) => m.chat_id === FORUM && m.plain_text === `Here you are.\n\n${RECORDING}`,
      ),
    );
    expect(shown.message.message_thread_id).toBe(77);
    open();
    const [voice] = await eventually(() => voicesTo(w).length === 1 && voicesTo(w));
    expect([voice?.chat_id, voice?.message_thread_id]).toEqual([FORUM, 77]);
    // Then the message is the answer alone, and the only one.
    await eventually(() =>
      w.telegram.sent.some(
        (m) => m.message_id === shown.message_id && m.plain_text === "Here you are.",
      ),
    );
    expect(w.telegram.sent.filter((m) => m.chat_id === FORUM)).toHaveLength(1);
    const [sentVoice] = callsOf(w, "sendVoice", FORUM);
    const settled = callsOf(w, "editMessageText", FORUM).at(-1);
    expect(settled?.at).toBeGreaterThanOrEqual(sentVoice?.at ?? Infinity);
    const spoken = ttsRequests(w).map((r) => r.body.contents[0]?.parts?.[0]?.text);
    expect(spoken).toEqual(["Here you are."]);
  });

  it("/voice is kept per topic, and a group without topics gets its voice note back too", async () => {
    w = await startWorld({ kind });
    await w.say("/voice off", { chatId: FORUM, threadId: 77 });
    await eventually(() =>
      w.telegram.sent.some((m) => m.plain_text.startsWith("Voice replies are off")),
    );
    w.gemini.scriptFor("chat-model", text("in 77, text only"));
    await sendVoiceNote(w, { chatId: FORUM, threadId: 77 });
    await eventually(() => w.telegram.sent.some((m) => m.plain_text === "in 77, text only"));
    w.gemini.scriptFor("chat-model", text("in 78, spoken"));
    await sendVoiceNote(w, { chatId: FORUM, threadId: 78 });
    const [inTopic] = await eventually(() => voicesTo(w).length === 1 && voicesTo(w));
    expect([inTopic?.chat_id, inTopic?.message_thread_id]).toEqual([FORUM, 78]);
    // On in 78 speaks to text there; 77 stays off, whatever 78 says.
    await w.say("/voice on", { chatId: FORUM, threadId: 78 });
    await eventually(() =>
      w.telegram.sent.some((m) => m.plain_text.startsWith("Voice replies are on")),
    );
    w.gemini.scriptFor("chat-model", text("typed in 78"));
    await w.say(`${MENTION} typed`, { chatId: FORUM, threadId: 78 });
    await eventually(() => voicesTo(w).length === 2);
    w.gemini.scriptFor("chat-model", text("in the group"));
    await sendVoiceNote(w, { chatId: GROUP });
    const voices = await eventually(() => voicesTo(w).length === 3 && voicesTo(w));
    expect(voices.map((v) => [v.chat_id, v.message_thread_id])).toEqual([
      [FORUM, 78],
      [FORUM, 78],
      [GROUP, undefined],
    ]);
    const spoken = ttsRequests(w).map((r) => r.body.contents[0]?.parts?.[0]?.text);
    expect(spoken).toEqual(["in 78, spoken", "typed in 78", "in the group"]);
  });

  it("speaks a scheduled task's answer where /voice is on; on auto it stays text", {
    timeout: 90_000,
  }, async () => {
    w = await startWorld({ kind });
    /** Has the model schedule a task to run now, through the real tool. */
    const schedule = async (instruction: string, answer: string) => {
      w.gemini.scriptFor(
        "chat-model",
        call("schedule_task", { when: "now", instruction, mode: "run" }),
      );
      w.gemini.scriptFor("chat-model", text(`Scheduled: ${instruction}`));
      w.gemini.scriptFor("chat-model", text(answer));
      await w.say(`please ${instruction}`);
      await eventually(() => textsTo(w).includes(answer));
    };
    await schedule("tell me the weather", "Sunny all day.");
    // The run is done before the next update of its conversation is taken.
    await w.say("/voice on");
    await eventually(() => textsTo(w).some((t) => t.startsWith("Voice replies are on")));
    expect(ttsRequests(w)).toEqual([]);
    await schedule("tell me the news", "Nothing new.");
    const voices = await eventually(() => voicesTo(w).length === 2 && voicesTo(w));
    expect(voices.every((v) => v.chat_id === ALLOWED_USER)).toBe(true);
    const spoken = ttsRequests(w).map((r) => r.body.contents[0]?.parts?.[0]?.text);
    expect(spoken).toEqual(["Scheduled: tell me the news", "Nothing new."]);
  });
});
