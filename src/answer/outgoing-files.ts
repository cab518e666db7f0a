import { imageSize } from "image-size";
import { TELEGRAM_PHOTO_MAX_BYTES, TELEGRAM_UPLOAD_MAX_BYTES } from "../media/upload-limits.js";
import { byteSize } from "../session/media-text.js";

const PHOTO_MAX_SIDES = 10_000;
const PHOTO_MAX_RATIO = 20;
const PHOTO_TYPES = new Set(["image/jpeg", "image/png", "image/webp"]);

/** A file Koroku sends to a chat. */
export type OutgoingFile = {
  bytes: Buffer;
  name: string;
  mimeType: string;
  /** Plain text, at most TELEGRAM_CAPTION_MAX_CHARS. */
  caption?: string;
};

/** A file larger than Telegram lets a bot send. */
export class FileTooLargeError extends Error {
  constructor(
    readonly fileName: string,
    readonly size: number,
  ) {
    super(
      `${fileName} is ${byteSize(size)}; Telegram takes files of up to ${byteSize(TELEGRAM_UPLOAD_MAX_BYTES)} from a bot`,
    );
    this.name = "FileTooLargeError";
  }
}

/**
 * Whether Telegram shows the file as a photo: a JPEG, PNG or WebP of at most 10 MB whose width
 * and height add up to at most 10,000 with a ratio of at most 20. Anything else goes as a
 * document, which Telegram takes as it is.
 */
export function sendsAsPhoto(file: Pick<OutgoingFile, "bytes" | "mimeType">): boolean {
  if (!PHOTO_TYPES.has(file.mimeType) || file.bytes.byteLength > TELEGRAM_PHOTO_MAX_BYTES) {
    return false;
  }
  try {
    const { width, height } = imageSize(file.bytes);
    return (
      width > 0 &&
      height > 0 &&
      width + height <= PHOTO_MAX_SIDES &&
      Math.max(width, height) / Math.min(width, height) <= PHOTO_MAX_RATIO
    );
  } catch {
    return false;
  }
}

/** A name grammY can put in a multipart header: no line breaks, quotes or semicolons. */
export const uploadName = (name: string): string => name.replace(/[\r\n";]/g, " ").trim() || "file";
