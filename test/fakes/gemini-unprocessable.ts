/**
 * Input the fake Gemini cannot process, as the real one cannot decode some photos, PDFs and
 * recordings: every request that holds such a part — inline, or an uploaded file with its bytes —
 * is refused with Gemini's 400 INVALID_ARGUMENT, however often it is sent. The real API names
 * no part in its answer, so neither does the fake.
 */
import type { Part } from "@google/genai";
import type { GenerateBody } from "./gemini-steps.js";

/** What a part holds, for a test to pick the ones Gemini cannot process. */
export interface PartContent {
  text?: string;
  mimeType?: string;
  /** Decoded inline data, or the bytes of the uploaded file a fileData part names. */
  bytes?: Buffer;
}

export type PartMatch = (part: PartContent) => boolean;

const IMAGE =
  "Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting";
const DOCUMENT = "The document has no pages.";
const OTHER = "Request contains an invalid argument.";

/** Gemini's words for input of this type it cannot process. */
export function unprocessableMessage(mimeType: string | undefined): string {
  if (mimeType?.startsWith("image/")) return IMAGE;
  if (mimeType === "application/pdf") return DOCUMENT;
  return OTHER;
}

/** Parts whose bytes equal `bytes`: a file Gemini cannot decode. */
export const withBytes =
  (bytes: Buffer): PartMatch =>
  (part) =>
    part.bytes?.equals(bytes) ?? false;

/** Text parts holding `words`. */
export const withText =
  (words: string): PartMatch =>
  (part) =>
    part.text?.includes(words) ?? false;

export class Unprocessable {
  private readonly rules: { match: PartMatch; message: string | undefined }[] = [];

  constructor(private readonly uploadedBytes: (fileUri: string) => Buffer | undefined) {}

  add(match: PartMatch, message?: string): void {
    this.rules.push({ match, message });
  }

  private contentOf(part: Part): PartContent {
    if (part.inlineData?.data !== undefined) {
      const bytes = Buffer.from(part.inlineData.data, "base64");
      return { bytes, ...(part.inlineData.mimeType ? { mimeType: part.inlineData.mimeType } : {}) };
    }
    if (part.fileData?.fileUri !== undefined) {
      const bytes = this.uploadedBytes(part.fileData.fileUri);
      return {
        ...(bytes ? { bytes } : {}),
        ...(part.fileData.mimeType ? { mimeType: part.fileData.mimeType } : {}),
      };
    }
    return part.text === undefined ? {} : { text: part.text, mimeType: "text/plain" };
  }

  /** Gemini's message for the first part of the request it cannot process, if any. */
  check(body: GenerateBody): string | undefined {
    if (this.rules.length === 0) return undefined;
    for (const content of body.contents) {
      for (const part of content.parts ?? []) {
        const held = this.contentOf(part);
        const rule = this.rules.find((r) => r.match(held));
        if (rule) return rule.message ?? unprocessableMessage(held.mimeType);
      }
    }
    return undefined;
  }
}
