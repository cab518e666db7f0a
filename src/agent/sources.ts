import type { GroundingPart } from "../session/events.js";

export type Source = { title: string; uri: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const listOf = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter(isRecord) : [];

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;

/**
 * The pages a grounded answer drew on, in the order Gemini gave them and each once: the web
 * chunks of Google Search (and retrieved contexts), then the pages url_context read successfully.
 */
export function sourcesOf(grounding: readonly GroundingPart[]): Source[] {
  const sources = new Map<string, Source>();
  const add = (uri: string | undefined, title: string | undefined) => {
    if (uri && !sources.has(uri)) sources.set(uri, { uri, title: title ?? uri });
  };
  for (const part of grounding) {
    for (const chunk of listOf(part.metadata?.groundingChunks)) {
      const page = isRecord(chunk.web)
        ? chunk.web
        : isRecord(chunk.retrievedContext)
          ? chunk.retrievedContext
          : undefined;
      if (page) add(text(page.uri), text(page.title));
    }
    for (const page of listOf(part.urlContext?.urlMetadata)) {
      const status = text(page.urlRetrievalStatus);
      if (status === undefined || status === "URL_RETRIEVAL_STATUS_SUCCESS") {
        add(text(page.retrievedUrl), undefined);
      }
    }
  }
  return [...sources.values()];
}

// Brackets in a title would end the Markdown link early.
const linkText = (title: string): string => title.replace(/[[\]\\]/g, (c) => `\\${c}`);
// encodeURIComponent leaves parentheses alone, and a ")" would end the link's target.
const linkTarget = (uri: string): string =>
  uri.replace(/[()\s]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);

/** The sources as a Markdown list of links, to go after the answer; empty when there are none. */
export function sourcesBlock(sources: readonly Source[]): string {
  if (sources.length === 0) return "";
  const lines = sources.map((s) => `- [${linkText(s.title)}](${linkTarget(s.uri)})`);
  return `Sources:\n${lines.join("\n")}`;
}
