import type { Part } from "@google/genai";
import { sniff } from "../media/sniff.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import type { MediaKind, MediaPart, StoredFiles } from "../session/events.js";

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/heic": "heic",
  "image/svg+xml": "svg",
  "application/pdf": "pdf",
  "application/json": "json",
  "text/csv": "csv",
  "text/html": "html",
  "text/plain": "txt",
  "audio/mpeg": "mp3",
  "audio/wav": "wav",
  "audio/ogg": "ogg",
  "video/mp4": "mp4",
};

function kindOf(mimeType: string): MediaKind {
  if (mimeType.startsWith("image/")) return "photo";
  if (mimeType.startsWith("audio/")) return "audio";
  if (mimeType.startsWith("video/")) return "video";
  return "document";
}

/**
 * Stores the files of a model answer (an image model's pictures, a chart code execution drew:
 * inlineData parts) as attachments of the conversation, and returns the media part each becomes,
 * by its part's index. Gemini's MIME type is checked against the bytes, as a user's is.
 */
export async function storeAnswerFiles(
  parts: readonly Part[],
  save: (file: NewAttachment) => Promise<StoredAttachment>,
): Promise<StoredFiles> {
  const files = new Map<number, MediaPart>();
  for (const [index, part] of parts.entries()) {
    const data = part.inlineData;
    if (!data) continue;
    const bytes = Buffer.from(data.data ?? "", "base64");
    const claimed = data.mimeType ?? "application/octet-stream";
    const sniffed = sniff(bytes, claimed);
    const mimeType = sniffed.ok ? sniffed.mimeType : claimed;
    const media = kindOf(mimeType);
    const stored = await save({ bytes, mimeType });
    const stem = media === "photo" ? "image" : "file";
    const name = `${stem}-${stored.sha256.slice(0, 12)}.${EXTENSIONS[mimeType] ?? "bin"}`;
    files.set(index, { kind: "media", media, ...stored, name });
  }
  return files;
}
