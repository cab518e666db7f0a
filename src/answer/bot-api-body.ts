import { randomBytes } from "node:crypto";
import { InputFile } from "grammy";

/** A Bot API call's body as grammY would send it. */
export type BotApiBody = { contentType: string; body: string | Uint8Array };

/** grammY's JSON: null values left out. */
const withoutNulls = (_key: string, value: unknown) => value ?? undefined;

const encoder = new TextEncoder();

/**
 * Encodes a payload the way grammY's own client does: JSON, or multipart/form-data when a field
 * is a file, each file attached as `attach://<id>`. Only what the courier sends is supported: files
 * in memory, as top-level fields (sendPhoto, sendDocument).
 */
export async function botApiBody(payload: Record<string, unknown>): Promise<BotApiBody> {
  const files = Object.entries(payload).filter(
    (entry): entry is [string, InputFile] => entry[1] instanceof InputFile,
  );
  if (files.length === 0) {
    return { contentType: "application/json", body: JSON.stringify(payload, withoutNulls) };
  }
  const boundary = randomBytes(16).toString("hex");
  /** Each part: its header, and for a file its bytes. */
  const parts: Uint8Array<ArrayBuffer>[][] = [];
  const ids = new Map<InputFile, string>();
  for (const [key, value] of Object.entries(payload)) {
    if (value === null || value === undefined) continue;
    let text: string;
    if (value instanceof InputFile) {
      const id = randomBytes(8).toString("hex");
      ids.set(value, id);
      text = `attach://${id}`;
    } else {
      text = typeof value === "object" ? JSON.stringify(value, withoutNulls) : String(value);
    }
    parts.push([encoder.encode(`content-disposition:form-data;name="${key}"\r\n\r\n${text}`)]);
  }
  for (const [key, file] of files) {
    // grammY's own way to a file's bytes; a Uint8Array comes back as it is.
    const data = await file.toRaw();
    if (!(data instanceof Uint8Array)) throw new Error(`the file in '${key}' is not in memory`);
    const header = `content-disposition:form-data;name="${ids.get(file)}";filename=${file.filename || key}\r\ncontent-type:application/octet-stream\r\n\r\n`;
    parts.push([encoder.encode(header), data as Uint8Array<ArrayBuffer>]);
  }
  const separator = encoder.encode(`\r\n--${boundary}\r\n`);
  const chunks = [encoder.encode(`--${boundary}\r\n`)];
  for (const [i, part] of parts.entries()) chunks.push(...(i === 0 ? [] : [separator]), ...part);
  chunks.push(encoder.encode(`\r\n--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}
