import type { EventPart, StoredEventBody } from "./events.js";

const MAX_SEARCH_CHARS_PER_PART = 2_000;

/** Rough token count (characters / 4), used between two measured prompt sizes. */
export function estimateTokens(body: StoredEventBody): number {
  const parts = body.event_type === "session" ? body.parts : body.summary;
  let chars = 0;
  for (const part of parts) chars += partChars(part);
  return Math.ceil(chars / 4);
}

function partChars(part: EventPart): number {
  switch (part.kind) {
    case "text":
      return part.text.length;
    case "function_call":
      return part.name.length + JSON.stringify(part.args ?? {}).length;
    case "function_response":
      return part.name.length + JSON.stringify(part.response ?? {}).length;
  }
}

/**
 * What search_history matches against: the visible text, tool names and their arguments and
 * results (clipped: a 1 MB file read should not make every search slow). Thoughts are left out
 * because users never see them.
 */
export function searchTextOf(body: StoredEventBody): string {
  const parts = body.event_type === "session" ? body.parts : body.summary;
  const pieces: string[] = [];
  for (const part of parts) {
    if (part.kind === "text") {
      if (!part.thought) pieces.push(part.text);
    } else if (part.kind === "function_call") {
      pieces.push(`${part.name} ${JSON.stringify(part.args ?? {})}`);
    } else {
      pieces.push(
        `${part.name} ${JSON.stringify(part.response ?? {}).slice(0, MAX_SEARCH_CHARS_PER_PART)}`,
      );
    }
  }
  // PostgreSQL text cannot hold NUL; a search never needs it.
  return pieces.join("\n").toLowerCase().replaceAll("\0", "\uFFFD");
}
