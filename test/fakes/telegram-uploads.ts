/**
 * File uploads to the fake Telegram: multipart/form-data bodies as grammY writes them (a part per
 * field, the file as a part named by the `attach://<id>` a field refers to), and the limits
 * Telegram puts on sendPhoto and sendDocument.
 */
import { imageSize } from "image-size";

/** Largest photo sendPhoto takes. */
export const PHOTO_MAX_BYTES = 10 * 1024 * 1024;
/** Largest file a bot may upload (sendDocument and the rest). */
export const UPLOAD_MAX_BYTES = 50 * 1024 * 1024;
/** A photo's width plus height, at most. */
export const PHOTO_MAX_SIDES = 10_000;
/** A photo's longer side over its shorter one, at most. */
export const PHOTO_MAX_RATIO = 20;
/** Characters of a caption, after entities are parsed. */
export const CAPTION_LIMIT = 1024;

/** A file part of a multipart request; JSON shows its name and size, not its bytes. */
export class UploadedFile {
  constructor(
    readonly filename: string,
    readonly bytes: Buffer,
  ) {}

  toJSON(): { filename: string; size: number } {
    return { filename: this.filename, size: this.bytes.byteLength };
  }
}

/**
 * The fields of a multipart/form-data body: text fields as strings, file parts (those with a
 * filename) as UploadedFile. A string says what is malformed.
 */
export function parseMultipart(
  body: Buffer,
  contentType: string,
): Record<string, string | UploadedFile> | string {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) return "multipart/form-data without a boundary";
  const delimiter = Buffer.from(`--${boundary}`);
  const between = Buffer.from(`\r\n--${boundary}`);
  const fields: Record<string, string | UploadedFile> = {};
  let at = body.indexOf(delimiter);
  if (at < 0) return "no multipart boundary in the body";
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString("latin1") === "--") return fields;
    if (body.subarray(at, at + 2).toString("latin1") === "\r\n") at += 2;
    const end = body.indexOf(between, at);
    if (end < 0) return "a multipart part without its closing boundary";
    const part = body.subarray(at, end);
    const headersEnd = part.indexOf("\r\n\r\n");
    if (headersEnd < 0) return "a multipart part without headers";
    const headers = part.subarray(0, headersEnd).toString("utf8").split("\r\n");
    const disposition = headers.find((line) => /^content-disposition\s*:/i.test(line)) ?? "";
    const name = /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) return "a multipart part without a name";
    // grammY writes the filename unquoted; browsers quote it.
    const filename = /;\s*filename=(?:"([^"]*)"|([^;]*))/i.exec(disposition);
    const content = part.subarray(headersEnd + 4);
    fields[name] = filename
      ? new UploadedFile((filename[1] ?? filename[2] ?? "").trim(), Buffer.from(content))
      : content.toString("utf8");
    at = end + 2;
  }
}

/**
 * What Telegram says of a photo it will not send as one, or undefined: at most 10 MB, an image it
 * can read, width plus height at most 10,000, the sides' ratio at most 20.
 */
export function photoProblem(bytes: Buffer): string | undefined {
  if (bytes.byteLength > PHOTO_MAX_BYTES) return "PHOTO_SAVE_FILE_INVALID";
  let size: { width: number; height: number };
  try {
    size = imageSize(bytes);
  } catch {
    return "IMAGE_PROCESS_FAILED";
  }
  const { width, height } = size;
  if (width <= 0 || height <= 0) return "IMAGE_PROCESS_FAILED";
  if (width + height > PHOTO_MAX_SIDES) return "PHOTO_INVALID_DIMENSIONS";
  if (Math.max(width, height) / Math.min(width, height) > PHOTO_MAX_RATIO) {
    return "PHOTO_INVALID_DIMENSIONS";
  }
  return undefined;
}

/** A photo's size as Telegram reports it (the fake keeps one size, the original). */
export function photoDimensions(bytes: Buffer): { width: number; height: number } {
  const { width, height } = imageSize(bytes);
  return { width, height };
}
