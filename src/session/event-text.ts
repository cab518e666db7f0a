import { isFreshStartNote } from "../recall/fresh-start.js";
import { type StoredEventBody, toolPayload } from "./events.js";
import { mediaSearchText, mediaTokens } from "./media-text.js";

const MAX_SEARCH_CHARS_PER_PART = 2_000;

/**
 * The history search tool's name. Its calls and results are left out of the searched text: each
 * search would otherwise find itself first, and the matches it returned, as new matches.
 */
export const SEARCH_HISTORY_TOOL = "search_history";

/**
 * The text cut to at most `maxChars` UTF-16 units with "…" appended when anything was cut. A cut
 * never splits a surrogate pair: half an emoji is not valid text (Telegram refuses it).
 */
export function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  const last = cut.charCodeAt(cut.length - 1);
  return `${last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut}…`;
}

/**
 * Whether recall by meaning embeds a stored event: a person's message, a model's answer or a
 * summary, with words to search and not forgotten.
 */
export function isEmbedded(row: {
  kind: string;
  role: string | null;
  is_user_message: number;
  search_text: string;
  forgotten_at?: string | null;
}): boolean {
  return (
    (row.forgotten_at ?? null) === null &&
    row.search_text.trim() !== "" &&
    (row.kind === "compaction" || row.role === "model" || row.is_user_message === 1)
  );
}

export type EventText = {
  /** Rough token count (characters / 4), used between two measured prompt sizes. */
  estimatedTokens: number;
  /**
   * What search_history matches against: the visible text (captions included), what media are,
   * their names and transcripts, tool names and their arguments and
   * results (clipped: a 1 MB file read should not make every search slow). Thoughts are left out
   * because users never see them, and searches themselves (see SEARCH_HISTORY_TOOL).
   */
  searchText: string;
};

/** Both derived texts of an event in one pass, serialising each tool payload once. */
export function eventText(body: StoredEventBody): EventText {
  const parts = body.event_type === "session" ? body.parts : body.summary;
  let chars = 0;
  const pieces: string[] = [];
  for (const part of parts) {
    if (part.kind === "text") {
      chars += part.text.length;
      if (!part.thought) pieces.push(part.text);
      continue;
    }
    if (part.kind === "media") {
      chars += 4 * mediaTokens(part);
      pieces.push(mediaSearchText(part));
      continue;
    }
    const tool = toolPayload(part);
    if (!tool) continue;
    chars += tool.name.length + tool.json.length;
    if (tool.name === SEARCH_HISTORY_TOOL) continue;
    const shown = tool.role === "call" ? tool.json : tool.json.slice(0, MAX_SEARCH_CHARS_PER_PART);
    pieces.push(`${tool.name} ${shown}`);
  }
  // /new's note is for the model: nothing a search (by words or by meaning) should find.
  const freshStart = body.event_type === "compaction" && isFreshStartNote(pieces.join(""));
  return {
    estimatedTokens: Math.ceil(chars / 4),
    // PostgreSQL text cannot hold NUL; a search never needs it. Case stays: the full-text
    // indexes ignore it, and search results show this text.
    searchText: freshStart ? "" : pieces.join("\n").replaceAll("\0", "\uFFFD"),
  };
}
