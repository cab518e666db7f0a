import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  speechFailureText,
  VOICE_NOTES_FROM,
  voiceNotesSent,
} from "../../src/voice/voice-reply.js";
import { status, text } from "../fakes/gemini.js";
import { checkOggOpus } from "../fakes/ogg-opus-check.js";
import { type Harness, startHarness } from "../helpers/harness.js";

const TTS = "gemini-3.8-flash-tts";
const CHAT = "900";
const sentence = (i: number) => `Sentence ${i} says a few things about the topic at hand. `;
/** An answer of three speech parts. */
const LONG = Array.from({ length: 50 }, (_, i) => sentence(i + 1))
  .join("")
  .trim();

describe("voice replies through the real app", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  /** Runs a turn answered `answer`, then its voice reply; returns what went out. */
  async function speak(answer: string, alreadySent = 0) {
    h.fake.scriptFor("chat-model", text(answer));
    const result = await h.app.agent.runTurn(CHAT, { text: "talk to me" });
    const sent: { after: number; bytes: Buffer }[] = [];
    const told: { text: string; after: number }[] = [];
    await h.app.voice.replies.reply({
      chatId: CHAT,
      text: result.text,
      alreadySent,
      send: async (voice, after) => {
        sent.push({ after, bytes: voice.bytes });
      },
      tellFailure: async (words, after) => {
        told.push({ text: words, after });
      },
    });
    return { sent, told };
  }

  it("sends each part with the count to record, keeps the notes with the answer, counts /usage", async () => {
    const { sent, told } = await speak(LONG);
    expect(told).toEqual([]);
    expect(sent.map((s) => s.after)).toEqual([1, 2, 3].map((n) => VOICE_NOTES_FROM + n));
    for (const note of sent) expect(checkOggOpus(note.bytes)).toMatchObject({ channels: 1 });
    const context = await h.app.store.loadContext(CHAT);
    const answer = context.events.at(-1)?.event;
    const notes = answer?.parts.filter((p) => p.kind === "media") ?? [];
    expect(notes).toHaveLength(3);
    expect(notes.every((n) => n.kind === "media" && n.spoken && n.media === "voice")).toBe(true);
    expect(notes.map((n) => (n.kind === "media" ? n.transcript : "")).join(" ")).toBe(LONG);
    const usage = await h.app.usage.since(CHAT, new Date(0));
    expect(usage.map((u) => u.model)).toContain(TTS);
  });

  it("a run after a crash speaks and sends only the parts not recorded", async () => {
    const { sent } = await speak(LONG, voiceNotesSent(VOICE_NOTES_FROM + 2));
    expect(sent.map((s) => s.after)).toEqual([VOICE_NOTES_FROM + 3]);
    expect(h.fake.requests.filter((r) => r.model === TTS)).toHaveLength(1);
    // Everything was said already (a failure was told): nothing more.
    const again = await speak("Short.", voiceNotesSent(VOICE_NOTES_FROM + 2));
    expect(again.sent).toEqual([]);
  });

  it("a failure after the first part is told once, recorded past the last part", async () => {
    h.fake.scriptFor(TTS, {
      kind: "reply",
      parts: [
        {
          inlineData: {
            mimeType: "audio/L16;codec=pcm;rate=24000",
            data: Buffer.alloc(4800).toString("base64"),
          },
        },
      ],
    });
    h.fake.scriptFor(TTS, status(400, "This text cannot be spoken."));
    const { sent, told } = await speak(LONG);
    expect(sent).toHaveLength(1);
    expect(told).toEqual([
      {
        text: expect.stringMatching(
          /^🎙 I could not record the rest of this answer as a voice note \(/,
        ),
        after: VOICE_NOTES_FROM + 4,
      },
    ]);
  });

  it("says what failed in words the user can read", () => {
    expect(speechFailureText(new Error("boom"), 0)).toBe(
      "🎙 I could not record this answer as a voice note (boom). The text above is all of it.",
    );
  });
});
