import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { sniff } from "../media/sniff.js";
import type { NewAttachment } from "../session/attachments.js";
import type { MediaKind } from "../session/events.js";

// Beyond these a result's files are named, not kept: a tool must not fill the database.
const MAX_FILES = 4;
const MAX_FILE_BYTES = 10 * 1024 * 1024;

export type ResultFile = NewAttachment & { media: MediaKind };

/** What a tool's result becomes: the words the model reads, and the files it sees beside them. */
export type ConvertedResult = { isError: boolean; text: string; files: ResultFile[] };

const mediaKindOf = (mimeType: string): MediaKind | undefined =>
  mimeType.startsWith("image/") ? "photo" : mimeType.startsWith("audio/") ? "audio" : undefined;

/** Cuts text at `max` characters, saying how much there was so the model knows it saw a part. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[cut: the tool returned ${text.length} characters; only the first ${max} are kept]`;
}

/**
 * An MCP result as text and files: text blocks and text resources as they are, images (and
 * audio) as files the model sees, anything else named in a line. Structured content stands in
 * when there is no text.
 */
export function convertResult(result: CallToolResult, maxChars: number): ConvertedResult {
  const lines: string[] = [];
  const files: ResultFile[] = [];
  const addFile = (base64: string, mimeType: string, label: string) => {
    const bytes = Buffer.from(base64, "base64");
    // By what the bytes are: Gemini refuses a request with an image it cannot read (an SVG, a
    // GIF) or one whose type lies, and the whole turn with it.
    const sniffed = sniff(bytes, mimeType);
    const media = sniffed.ok ? mediaKindOf(sniffed.mimeType) : undefined;
    if (!sniffed.ok || !media || files.length >= MAX_FILES || bytes.byteLength > MAX_FILE_BYTES) {
      lines.push(`[${label}: ${mimeType}, ${bytes.byteLength} bytes, not shown]`);
      return;
    }
    files.push({ bytes, mimeType: sniffed.mimeType, media });
    lines.push(`[${label}: ${sniffed.mimeType}, attached as file ${files.length}]`);
  };
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        lines.push(block.text);
        break;
      case "image":
      case "audio":
        addFile(block.data, block.mimeType, block.type);
        break;
      case "resource": {
        const { resource } = block;
        if ("text" in resource && typeof resource.text === "string") {
          lines.push(`[resource ${resource.uri}]\n${resource.text}`);
        } else if ("blob" in resource && typeof resource.blob === "string") {
          addFile(
            resource.blob,
            resource.mimeType ?? "application/octet-stream",
            `resource ${resource.uri}`,
          );
        }
        break;
      }
      case "resource_link":
        lines.push(`[link to resource ${block.uri}${block.name ? ` (${block.name})` : ""}]`);
        break;
    }
  }
  if (lines.length === 0 && result.structuredContent !== undefined) {
    lines.push(JSON.stringify(result.structuredContent));
  }
  return { isError: result.isError === true, text: capText(lines.join("\n"), maxChars), files };
}
