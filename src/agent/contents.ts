import type { Content } from "@google/genai";
import { textOf, toContent } from "../session/events.js";
import type { ChatContext } from "../session/store.js";
import { summaryFraming } from "./prompts.js";

/**
 * The request contents for a context: the summary (framed as a user-role note) first, then every
 * event verbatim. Gemini wants turns to alternate, so a note is merged into the neighbouring user
 * turn instead of standing as a second user turn in a row.
 */
export function contentsFor(context: ChatContext, extraUserNote?: string): Content[] {
  const contents = context.events.map((e) => toContent(e.event));
  if (context.summary) {
    const note = { text: summaryFraming(textOf(context.summary.event.summary)) };
    const first = contents[0];
    if (first?.role === "user") contents[0] = { ...first, parts: [note, ...(first.parts ?? [])] };
    else contents.unshift({ role: "user", parts: [note] });
  }
  if (extraUserNote !== undefined) {
    const last = contents.at(-1);
    const note = { text: extraUserNote };
    if (last?.role === "user")
      contents[contents.length - 1] = { ...last, parts: [...(last.parts ?? []), note] };
    else contents.push({ role: "user", parts: [note] });
  }
  return contents;
}
