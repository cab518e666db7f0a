import type { Part } from "@google/genai";

/** The stamp the agent puts before each user message in a request (src/agent/prompts.ts). */
export const STAMP = /^\[[A-Z][a-z]+day, \d{1,2} [A-Z][a-z]+ \d{4} at \d\d:\d\d\]$/;

export const isStamp = (part: Part): boolean => part.text !== undefined && STAMP.test(part.text);

/** The parts the user (or a tool) sent, without the stamps. */
export const withoutStamps = (parts: readonly Part[] | undefined): Part[] =>
  (parts ?? []).filter((part) => !isStamp(part));

/** The words of a content: its text parts, stamps left out, joined. */
export const wordsOf = (parts: readonly Part[] | undefined): string =>
  withoutStamps(parts)
    .map((part) => part.text ?? "")
    .join("");
