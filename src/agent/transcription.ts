import type { Logger } from "../logger.js";
import { truncate } from "../session/event-text.js";
import type { MediaPart, SessionEvent } from "../session/events.js";
import { sendableEvents } from "../session/refusals.js";
import type { SessionStore, StoredSession } from "../session/store.js";
import type { AgentHooks } from "./hooks.js";
import type { ModelClient } from "./model-client.js";
import { TRANSCRIBE_REQUEST } from "./prompts.js";
import { type MediaSource, retryingLostFiles } from "./request-media.js";

/** A transcript longer than this (an hour of talk is ~60,000 characters) is cut: it is for reading. */
export const MAX_TRANSCRIPT_CHARS = 100_000;

const needsTranscript = (part: MediaPart) =>
  (part.media === "voice" || part.media === "audio") && part.transcript === undefined;

export type Transcriber = ReturnType<typeof createTranscriber>;

/**
 * Writes down what was said in the conversation's voice notes and audio, once each, with the
 * compaction model, and stores it with the media part: /history shows it, search_history finds
 * it, and summaries tell of it. A failure leaves the part as it was (the audio itself still goes
 * to Gemini) and is tried again after the conversation's next turn in this process, or with its
 * next voice note or audio.
 */
export function createTranscriber(deps: {
  store: SessionStore;
  model: ModelClient;
  /** The audio reaches Gemini as a turn's media do: inline when small, else as an uploaded file. */
  media: MediaSource;
  /** Told of each call, so that /usage counts transcripts with the conversation's other calls. */
  hooks: AgentHooks;
  logger: Logger;
  settings: { model: string };
}) {
  async function transcribe(
    chatId: string,
    stored: StoredSession,
    part: MediaPart,
  ): Promise<string | undefined> {
    const alone = {
      summary: undefined,
      events: [{ ...stored, event: { ...stored.event, parts: [part] } }],
    };
    const media = await deps.media.forRequest(alone);
    const audio = media.toGemini(part);
    // Bytes gone (the conversation cleared meanwhile), or a file Gemini refused: nothing to hear.
    if (!audio.inlineData && !audio.fileData) return undefined;
    const result = await retryingLostFiles(deps.media, alone, media, (current) =>
      deps.model.generate({
        model: deps.settings.model,
        contents: [{ role: "user", parts: [current.toGemini(part), { text: TRANSCRIBE_REQUEST }] }],
      }),
    );
    deps.hooks.emit("modelCall", { chatId, model: deps.settings.model, usage: result.usage });
    const text = (result.content.parts ?? [])
      .filter((p) => !p.thought && p.text)
      .map((p) => p.text)
      .join("")
      .trim();
    return text === "" ? undefined : truncate(text, MAX_TRANSCRIPT_CHARS);
  }

  /** Conversations where a transcription failed in this process: tried again after their next turn. */
  const failedIn = new Set<string>();

  /** Transcribes every voice note and audio file of the context that has no transcript yet. */
  async function transcribePending(chatId: string): Promise<number> {
    const log = deps.logger.child({ chat_id: chatId });
    const context = await deps.store.loadContext(chatId);
    failedIn.delete(chatId);
    let written = 0;
    // A recording Gemini refused is not sent again (its event comes back as a stand-in, without it).
    for (const stored of sendableEvents(context.events)) {
      if (!stored.event.parts.some((p) => p.kind === "media" && needsTranscript(p))) continue;
      const parts: SessionEvent["parts"] = [];
      let changed = false;
      for (const part of stored.event.parts) {
        if (part.kind !== "media" || !needsTranscript(part)) {
          parts.push(part);
          continue;
        }
        try {
          const transcript = await transcribe(chatId, stored, part);
          if (transcript !== undefined) changed = true;
          parts.push(transcript === undefined ? part : { ...part, transcript });
        } catch (error) {
          failedIn.add(chatId);
          log.warn(
            { err: error, message_id: stored.id },
            "could not transcribe a voice note; will try again later",
          );
          parts.push(part);
        }
      }
      if (changed && (await deps.store.rewrite(chatId, stored.id, { ...stored.event, parts }))) {
        written++;
      }
    }
    return written;
  }

  return {
    transcribePending,
    /**
     * After a turn: transcribes when the turn's message held a voice note or audio (`heard`), or
     * a transcription of the conversation failed before; else it reads nothing, as most turns
     * have nothing to write down.
     */
    afterTurn: (chatId: string, heard: boolean): Promise<number> =>
      heard || failedIn.has(chatId) ? transcribePending(chatId) : Promise.resolve(0),
  };
}
