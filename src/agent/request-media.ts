import type { Part } from "@google/genai";
import type { MediaPart, MediaToGemini } from "../session/events.js";
import { mediaNote } from "../session/media-text.js";
import type { ChatContext } from "../session/store.js";

/**
 * Media bytes one request carries inline, at most. Gemini takes up to 100 MB inline per request;
 * base64 makes the body a third larger than the bytes, and each request's bytes are held in
 * memory while it is sent, so Koroku stays well under: the newest media are attached, older ones
 * are described in words (see docs/media.md).
 */
export const INLINE_MEDIA_BUDGET_BYTES = 20 * 1024 * 1024;

export type ReadAttachments = (hashes: readonly string[]) => Promise<Map<string, Buffer>>;

/** The MIME type Gemini is given: it reads text and code files only under text/plain. */
export function geminiMimeType(part: MediaPart): string {
  if (part.mimeType.startsWith("text/") || part.mimeType === "application/json")
    return "text/plain";
  return part.mimeType;
}

function mediaParts(context: ChatContext): MediaPart[] {
  const parts: MediaPart[] = [];
  for (const stored of context.events) {
    for (const part of stored.event.parts) if (part.kind === "media") parts.push(part);
  }
  return parts;
}

/**
 * How each media part of the context reaches Gemini in the next request: newest first, inline
 * while the budget lasts, read from the database now (the context holds no bytes). A part whose
 * bytes are gone (cleared by another process meanwhile) or past the budget is described.
 */
export async function mediaForRequest(
  context: ChatContext,
  read: ReadAttachments,
  budgetBytes: number = INLINE_MEDIA_BUDGET_BYTES,
): Promise<MediaToGemini> {
  const inline = new Set<string>();
  let used = 0;
  for (const part of mediaParts(context).reverse()) {
    if (inline.has(part.sha256)) continue;
    if (used + part.size > budgetBytes) continue;
    inline.add(part.sha256);
    used += part.size;
  }
  const bytes = await read([...inline]);
  const encoded = new Map<string, string>();
  return (part): Part => {
    const data = bytes.get(part.sha256);
    if (!data) return mediaNote(part);
    let base64 = encoded.get(part.sha256);
    if (base64 === undefined) {
      base64 = data.toString("base64");
      encoded.set(part.sha256, base64);
    }
    return { inlineData: { mimeType: geminiMimeType(part), data: base64 } };
  };
}
