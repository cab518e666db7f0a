import { GeminiError } from "../agent/gemini-errors.js";
import type { Logger } from "../logger.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import { functionCallsOf, type MediaPart } from "../session/events.js";
import type { SessionStore } from "../session/store.js";
import { EncodingFailedError } from "./encoder-pool.js";
import type { EncodedVoice } from "./ogg-opus.js";
import { type Speaker, SpeechFailedError } from "./speech.js";
import { MAX_PARTS, speechParts, spokenText } from "./spoken-text.js";

/**
 * Where an update's count of things delivered (the inbox row's `delivered`) starts counting voice
 * notes: past any answer's files and messages, so that one count orders them all. A count at or
 * past it says every file and message went out (the voice notes come last).
 */
export const VOICE_NOTES_FROM = 1_000_000;

/** What an earlier run of the update sent of the voice notes, from its delivered count. */
export const voiceNotesSent = (delivered: number): number =>
  Math.max(0, delivered - VOICE_NOTES_FROM);

export type VoiceReplyRun = {
  /** The conversation key. */
  chatId: string;
  /** The answer as the model wrote it (Markdown). */
  text: string;
  /** The user's stop: no further part is spoken or sent. */
  stop?: AbortSignal;
  /** Parts an earlier run of this update sent (voiceNotesSent). */
  alreadySent: number;
  /** A part is being spoken and the user waits for it (the live view says so again). */
  recording?(): void;
  /**
   * Sends one voice note and records that it went out: `after` is the delivered count to record
   * (VOICE_NOTES_FROM + the note's place, from 1).
   */
  send(voice: EncodedVoice, after: number): Promise<void>;
  /** Tells the user that speaking failed, and records `after` so that no run says it again. */
  tellFailure(text: string, after: number): Promise<void>;
};

export type VoiceReplies = { reply(run: VoiceReplyRun): Promise<void> };

/** The parts of an answer that are spoken, at most MAX_PARTS: none when it has no words to say. */
export const partsToSpeak = (markdown: string): string[] =>
  speechParts(spokenText(markdown)).slice(0, MAX_PARTS);

/** What the user is told when a voice note could not be made: the words are in the message. */
export function speechFailureText(error: unknown, spoken: number): string {
  const cause =
    error instanceof GeminiError
      ? error.userMessage
      : error instanceof Error
        ? error.message
        : "an unknown failure";
  const what = spoken === 0 ? "this answer" : "the rest of this answer";
  return `🎙 I could not record ${what} as a voice note (${cause}). The text above is all of it.`;
}

/**
 * Speaks an answer as voice notes, part by part: each part is sent as soon as it is spoken, and
 * the next one is spoken while it goes out. Each note is stored as an attachment of the
 * conversation and kept with the answer's event (spoken: never sent back to Gemini; /history
 * shows it with its words as the transcript). A failure of the speech stops there and is told
 * once; a stop ends it quietly. Telegram or the database failing is thrown, for the inbox to
 * run the update again, which sends only the parts not yet recorded.
 */
export function createVoiceReplies(deps: {
  speaker: Speaker;
  save(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
  store: Pick<SessionStore, "loadContext" | "rewrite">;
  logger: Logger;
}): VoiceReplies {
  /** Adds a sent note to the answer's stored event, unless an earlier run did. */
  async function keep(chatId: string, note: MediaPart): Promise<void> {
    const context = await deps.store.loadContext(chatId);
    const answer = context.events.at(-1);
    if (answer?.event.role !== "model" || functionCallsOf(answer.event).length > 0) return;
    if (answer.event.parts.some((p) => p.kind === "media" && p.sha256 === note.sha256)) return;
    const event = { ...answer.event, parts: [...answer.event.parts, note] };
    await deps.store.rewrite(chatId, answer.id, event);
  }

  type Spoken = { voice?: EncodedVoice; failure?: unknown };
  const speak = (run: VoiceReplyRun, text: string): Promise<Spoken> =>
    deps.speaker.speak(run.chatId, text, run.stop).then(
      (voice) => (voice ? { voice } : {}),
      (failure: unknown) => {
        if (
          failure instanceof GeminiError ||
          failure instanceof SpeechFailedError ||
          failure instanceof EncodingFailedError
        )
          return { failure };
        throw failure;
      },
    );

  async function reply(run: VoiceReplyRun): Promise<void> {
    const parts = partsToSpeak(run.text);
    if (run.alreadySent >= parts.length || run.stop?.aborted) return;
    const log = deps.logger.child({ chat_id: run.chatId });
    let next: Promise<Spoken> | undefined = speak(run, parts[run.alreadySent] as string);
    for (let i = run.alreadySent; i < parts.length && next; i++) {
      run.recording?.();
      const spoken: Spoken = await next;
      next = i + 1 < parts.length ? speak(run, parts[i + 1] as string) : undefined;
      // Settled by the next round, or left behind by a failure here: never unhandled.
      next?.catch(() => {});
      if (spoken.failure !== undefined) {
        log.warn(
          { err: spoken.failure, part: i, parts: parts.length },
          "speaking the answer failed",
        );
        await run.tellFailure(
          speechFailureText(spoken.failure, i),
          VOICE_NOTES_FROM + parts.length + 1,
        );
        return;
      }
      if (!spoken.voice || run.stop?.aborted) return;
      const { bytes, seconds } = spoken.voice;
      const stored = await deps.save(run.chatId, { bytes, mimeType: "audio/ogg" });
      await run.send(spoken.voice, VOICE_NOTES_FROM + i + 1);
      await keep(run.chatId, {
        kind: "media",
        media: "voice",
        ...stored,
        name: `voice-${stored.sha256.slice(0, 12)}.ogg`,
        duration: Math.round(seconds),
        transcript: parts[i] as string,
        spoken: true,
      });
    }
  }

  return { reply };
}
