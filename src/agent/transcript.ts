import { truncate } from "../session/event-text.js";
import { textOf, toolPayload } from "../session/events.js";
import { mediaNote } from "../session/media-text.js";
import { sendableEvents } from "../session/refusals.js";
import type { StoredSession } from "../session/store.js";

const MAX_TOOL_TEXT = 1_500;

const clip = (text: string) =>
  text.length > MAX_TOOL_TEXT
    ? `${truncate(text, MAX_TOOL_TEXT)} (${text.length - MAX_TOOL_TEXT} more characters)`
    : text;

/**
 * The conversation as plain text for the summary model. A transcript instead of the raw turns:
 * the summary model may differ from the one that signed the function calls, and it must not be
 * tempted to call tools itself.
 */
export function transcriptOf(events: readonly StoredSession[]): string {
  const lines: string[] = [];
  // What Gemini refused would be refused in the summary request too.
  for (const { event } of sendableEvents(events)) {
    const speaker = event.role === "user" ? "User" : "Koroku";
    const text = textOf(event.parts);
    // Media as words (what it was, its name, what was said in it), so the summary can tell of it;
    // not a picture made while thinking, nor the voice note of an answer whose words are here.
    const media = event.parts.flatMap((p) =>
      p.kind === "media" && !p.thought && !p.spoken ? [mediaNote(p).text] : [],
    );
    if (media.length > 0) lines.push(`${speaker} sent ${media.join(" ")}`);
    if (text.trim()) lines.push(`${speaker}: ${text}`);
    for (const part of event.parts) {
      const tool = toolPayload(part);
      if (tool?.role === "call") lines.push(`Koroku called ${tool.name} ${clip(tool.json)}`);
      else if (tool) lines.push(`Result of ${tool.name}: ${clip(tool.json)}`);
    }
  }
  return lines.join("\n");
}
