import type { Content } from "@google/genai";
import { type MediaToGemini, textOf, toContent } from "../session/events.js";
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

/**
 * The request contents for a context: the summary (framed as a user-role note) first, then every
 * event verbatim (its media as `media` says, see request-media.ts), then the extra note, if
 * any, as the user's.
 */
export function contentsFor(
  context: ChatContext,
  media: MediaToGemini,
  extraUserNote?: string,
): Content[] {
  const contents = context.events.map((e) => toContent(e.event, media));
  if (context.summary) {
    const note = { text: summaryFraming(textOf(context.summary.event.summary)) };
    contents.unshift({ role: "user", parts: [note] });
  }
  if (extraUserNote !== undefined)
    contents.push({ role: "user", parts: [{ text: extraUserNote }] });
  return mergeUserTurns(contents);
}
