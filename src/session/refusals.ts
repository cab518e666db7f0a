import { cleanFileName } from "../media/file-name.js";
import {
  type EventPart,
  isRealUserMessage,
  type MediaKind,
  type MediaPart,
  type SessionEvent,
} from "./events.js";
import type { StoredSession } from "./store.js";

/**
 * Gemini refuses some input for good: a photo it cannot decode ("Unable to process input
 * image"), a PDF with no pages, a recording it cannot read. Sent again, it would be refused
 * again, and so would every later request of the conversation. So a refused turn is kept (the
 * user's message, and a model-role event saying it was not answered), and from then on Gemini
 * gets stand-ins for what it refused.
 */

const WHAT: Record<MediaKind, string> = {
  photo: "a photo",
  voice: "a voice note",
  audio: "an audio file",
  video: "a video",
  video_note: "a video note",
  animation: "an animation",
  document: "a document",
  sticker: "a sticker",
};

/** What Gemini is told in place of a file it refused: "[a document “x.pdf” Gemini could not read]". */
export function refusedFileText(part: MediaPart): string {
  const name = cleanFileName(part.name);
  const named = name && part.media !== "photo" ? ` “${name}”` : "";
  return `[${WHAT[part.media]}${named} Gemini could not read]`;
}

/** In place of a message without files whose words Gemini refused. */
export const REFUSED_WORDS = "[a message Gemini could not process; it was not answered]";

/** The event stored where Gemini refused the turn: /history shows its text. */
export function refusalEvent(reason: string, request: "first" | "later"): SessionEvent {
  return {
    v: 1,
    event_type: "session",
    role: "model",
    parts: [{ kind: "text", text: `⚠ Not answered: Gemini refused the request (${reason})` }],
    refused: { reason, request },
  };
}

/**
 * The user's message with stand-ins for what Gemini refused: its files when it held any (a
 * Telegram message's words are no more than 4,096 characters; its files are what Gemini cannot
 * decode), else its words.
 */
function standIn(stored: StoredSession): StoredSession {
  const { parts } = stored.event;
  const hasFiles = parts.some((part) => part.kind === "media");
  const replaced: EventPart[] = hasFiles
    ? parts.map((part) =>
        part.kind === "media" ? { kind: "text", text: refusedFileText(part) } : part,
      )
    : [{ kind: "text", text: REFUSED_WORDS }];
  return { ...stored, event: { ...stored.event, parts: replaced } };
}

/**
 * The events as Gemini may be sent them: the refusal events left out, and each refused turn
 * without what was refused. A turn refused at its first request keeps its message with
 * stand-ins; one refused later (Gemini took the message, then refused a request holding tool
 * results or its own files) keeps the message and leaves out what the turn added after it.
 * Events before a refused turn are returned as they are, so the requests' prefix stays the same.
 */
export function sendableEvents(events: readonly StoredSession[]): readonly StoredSession[] {
  if (!events.some((stored) => stored.event.refused)) return events;
  const sent: StoredSession[] = [];
  for (const stored of events) {
    const refused = stored.event.refused;
    if (!refused) {
      sent.push(stored);
      continue;
    }
    const start = sent.findLastIndex((earlier) => isRealUserMessage(earlier.event));
    // The refused message was summarised away: nothing of it is left to leave out.
    if (start < 0) continue;
    if (refused.request === "first") sent[start] = standIn(sent[start] as StoredSession);
    sent.length = start + 1;
  }
  return sent;
}
