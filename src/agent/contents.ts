import type { Content } from "@google/genai";
import { isRealUserMessage, type MediaToGemini, textOf, toContent } from "../session/events.js";
import { sendableEvents } from "../session/refusals.js";
import type { ChatContext } from "../session/store.js";
import { summaryFraming } from "./prompts.js";

/**
 * Gemini wants user and model turns to alternate. Two user turns meet when a model call failed or
 * was refused (nothing of it is stored) and the user wrote again, and where a note is added:
 * they become one turn holding both turns' parts, in order.
 */
function mergeUserTurns(contents: readonly Content[]): Content[] {
  const merged: Content[] = [];
  for (const content of contents) {
    const last = merged.at(-1);
    if (last?.role === "user" && content.role === "user") {
      merged[merged.length - 1] = {
        ...last,
        parts: [...(last.parts ?? []), ...(content.parts ?? [])],
      };
    } else {
      merged.push(content);
    }
  }
  return merged;
}

export type ContentsOptions = {
  /**
   * The stamp put before each message the user sent, from the time it was stored (the row's
   * created_at): a fact of the message, so a request repeats what earlier ones said.
   */
  sentAt?: (createdAt: string) => string;
  /** A note for this request only, after everything else, as the user's. */
  note?: string;
};

/**
 * The request contents for a context: the summary (framed as a user-role note) first, then every
 * event verbatim (its media as `media` says, see request-media.ts; a user message after its
 * stamp; a turn Gemini refused with stand-ins, see refusals.ts), then the note, if any. Each request starts with the bytes of the one before it (up to
 * its note), so Gemini's implicit cache serves them: nothing here may depend on the time of the
 * request.
 */
export function contentsFor(
  context: ChatContext,
  media: MediaToGemini,
  options: ContentsOptions = {},
): Content[] {
  const { sentAt, note } = options;
  const contents = sendableEvents(context.events).map(({ event, createdAt }) => {
    const content = toContent(event, media);
    if (!sentAt || !isRealUserMessage(event)) return content;
    return { ...content, parts: [{ text: sentAt(createdAt) }, ...(content.parts ?? [])] };
  });
  if (context.summary) {
    const framed = { text: summaryFraming(textOf(context.summary.event.summary)) };
    contents.unshift({ role: "user", parts: [framed] });
  }
  if (note !== undefined) contents.push({ role: "user", parts: [{ text: note }] });
  return mergeUserTurns(contents);
}
