import type { RichMessage } from "grammy/types";

// The fields of rich blocks and rich text that hold words; formulas by their LaTeX.
const WORDS = ["text", "expression", "blocks", "items", "cells", "summary", "caption", "credit"];

/**
 * A rich message's words as plain text (a reply to one of Koroku's answers, which go out as rich
 * messages, or one forwarded): each block on a line of its own, formatting and links dropped.
 */
export function richMessageText(rich: RichMessage): string {
  const lines: string[] = [];
  const words = (value: unknown): string => {
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return value.map(words).join("");
    if (typeof value !== "object" || value === null) return "";
    const fields = value as Record<string, unknown>;
    return WORDS.map((key) => words(fields[key])).join("");
  };
  const block = (value: unknown) => {
    const fields = (value ?? {}) as Record<string, unknown>;
    const nested = fields.blocks ?? fields.items ?? fields.cells;
    if (Array.isArray(nested)) {
      for (const inner of nested.flat()) block(inner);
      return;
    }
    const line = words(value).trim();
    if (line !== "") lines.push(line);
  };
  for (const each of rich.blocks) block(each);
  return lines.join("\n");
}
