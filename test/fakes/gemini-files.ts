/**
 * The fake Gemini's Files API: the resumable upload protocol the SDK speaks
 * (`POST /upload/{version}/files` with `X-Goog-Upload-Command: start`, then the bytes to the upload
 * URL in chunks, the last one with `upload, finalize`), `GET /{version}/files/{id}`, videos that
 * stay PROCESSING for a while, files that expire, and the checks generateContent makes on the
 * `fileData` parts that refer to them.
 */
import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { GEMINI_INLINE_MIME_TYPES } from "./gemini-validation.js";

/** Gemini keeps an uploaded file this long. */
export const FILE_LIFETIME_MS = 48 * 60 * 60 * 1000;
/** Gemini's largest file. */
export const MAX_FILE_BYTES = 2 * 1024 * 1024 * 1024;

export type FileState = "PROCESSING" | "ACTIVE" | "FAILED";

export interface FakeFile {
  /** `files/<id>`. */
  name: string;
  displayName?: string;
  mimeType: string;
  bytes: Buffer;
  uri: string;
  state: FileState;
  createTime: string;
  expirationTime: string;
  /** files.get calls left before a PROCESSING file becomes ACTIVE (or FAILED). */
  processingGets: number;
  /** What processing ends in. */
  outcome: "ACTIVE" | "FAILED";
}

export interface FilesOptions {
  /** How long an uploaded file lives (Gemini: 48 hours). */
  lifetimeMs?: number;
  /** files.get calls a video answers PROCESSING to before it is ACTIVE (Gemini: seconds' worth). */
  processingGets?: number;
}

export type FileProblem = { status: number; statusName?: string; message: string };

type Upload = {
  mimeType: string;
  declared: number;
  displayName?: string;
  chunks: Buffer[];
  received: number;
};

const UPLOAD_START = /^\/upload\/(v1|v1beta|v1alpha)\/files$/;
const FILE_PATH = /^\/(v1|v1beta|v1alpha)\/files\/([a-z0-9-]+)$/;

export const fileGone = (id: string): FileProblem => ({
  status: 403,
  message: `You do not have permission to access the File ${id} or it may not exist.`,
});

const notActive = (id: string): FileProblem => ({
  status: 400,
  statusName: "FAILED_PRECONDITION",
  message: `The File ${id} is not in an ACTIVE state and usage is not allowed.`,
});

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("error", reject);
    req.once("end", () => resolve(Buffer.concat(chunks)));
  });

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export class FakeFiles {
  readonly files = new Map<string, FakeFile>();
  /** Every finished upload, in order: `files/<id>` and its MIME type and size. */
  readonly uploaded: { name: string; mimeType: string; size: number }[] = [];
  private readonly uploads = new Map<string, Upload>();
  private readonly lifetimeMs: number;
  private readonly processingGets: number;
  private failNextProcessing = 0;

  constructor(
    private readonly baseUrl: () => string,
    options: FilesOptions = {},
  ) {
    this.lifetimeMs = options.lifetimeMs ?? FILE_LIFETIME_MS;
    this.processingGets = options.processingGets ?? 1;
  }

  /** The next `times` videos uploaded end their processing FAILED. */
  failProcessing(times = 1): void {
    this.failNextProcessing += times;
  }

  /** Deletes files the way Gemini does when they expire; all of them without names. */
  expire(...names: string[]): void {
    for (const name of names.length > 0 ? names : [...this.files.keys()]) this.files.delete(name);
  }

  /** Whether the request is one of the Files API's (upload, or get). */
  serves(req: IncomingMessage, url: URL): boolean {
    return (
      (req.method === "POST" && UPLOAD_START.test(url.pathname)) ||
      (req.method === "GET" && FILE_PATH.test(url.pathname))
    );
  }

  /**
   * Serves a Files API request (see `serves`); `denied` is what the API key earns, if anything.
   * The body is read first, as Gemini's front end reads it before it answers.
   */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    denied: FileProblem | undefined,
    refuse: (problem: FileProblem) => void,
  ): Promise<void> {
    const body = await readBody(req);
    if (denied) {
      refuse(denied);
      return;
    }
    const id = FILE_PATH.exec(url.pathname)?.[2];
    if (id !== undefined) {
      this.get(id, res, refuse);
      return;
    }
    const uploadId = url.searchParams.get("upload_id");
    if (uploadId === null) {
      this.start(req, body, res, refuse);
      return;
    }
    this.receive(req, body, res, uploadId, refuse);
    return;
  }

  /** What generateContent says of a fileData part, or undefined when it may be used. */
  checkReference(fileUri: string, mimeType: string): FileProblem | undefined {
    const id = /\/files\/([a-z0-9-]+)$/.exec(fileUri)?.[1];
    if (id === undefined || !fileUri.startsWith(this.baseUrl())) {
      return { status: 400, message: `Invalid or unsupported file uri: ${fileUri}` };
    }
    const file = this.live(`files/${id}`);
    if (!file) return fileGone(id);
    if (file.state !== "ACTIVE") return notActive(id);
    if (mimeType !== file.mimeType) {
      return {
        status: 400,
        message: `The MIME type ${mimeType} does not match the File ${id}'s MIME type ${file.mimeType}.`,
      };
    }
    return undefined;
  }

  /** The bytes of the live file a fileData uri names. */
  bytesOf(fileUri: string): Buffer | undefined {
    const id = /\/files\/([a-z0-9-]+)$/.exec(fileUri)?.[1];
    return id === undefined ? undefined : this.live(`files/${id}`)?.bytes;
  }

  /** The file, unless it has expired (then it is deleted, as Gemini deletes it). */
  private live(name: string): FakeFile | undefined {
    const file = this.files.get(name);
    if (file && Date.parse(file.expirationTime) <= Date.now()) {
      this.files.delete(name);
      return undefined;
    }
    return file;
  }

  private start(
    req: IncomingMessage,
    raw: Buffer,
    res: ServerResponse,
    refuse: (problem: FileProblem) => void,
  ): void {
    const body = raw.toString("utf8");
    if (header(req, "x-goog-upload-protocol") !== "resumable") {
      refuse({ status: 400, message: "Upload protocol must be resumable." });
      return;
    }
    if (header(req, "x-goog-upload-command") !== "start") {
      refuse({ status: 400, message: "The first upload command must be start." });
      return;
    }
    const declared = Number(header(req, "x-goog-upload-header-content-length"));
    if (!Number.isSafeInteger(declared) || declared <= 0) {
      refuse({ status: 400, message: "X-Goog-Upload-Header-Content-Length is required." });
      return;
    }
    if (declared > MAX_FILE_BYTES) {
      refuse({ status: 400, message: `File size exceeds the limit of ${MAX_FILE_BYTES}.` });
      return;
    }
    let metadata: { file?: { mimeType?: unknown; displayName?: unknown } };
    try {
      metadata = body === "" ? {} : JSON.parse(body);
    } catch {
      refuse({ status: 400, message: "Invalid JSON payload received." });
      return;
    }
    const mimeType = metadata.file?.mimeType ?? header(req, "x-goog-upload-header-content-type");
    if (typeof mimeType !== "string" || !GEMINI_INLINE_MIME_TYPES.has(mimeType)) {
      refuse({ status: 400, message: `Unsupported MIME type: ${String(mimeType)}` });
      return;
    }
    const id = randomBytes(9).toString("hex");
    const displayName = metadata.file?.displayName;
    this.uploads.set(id, {
      mimeType,
      declared,
      ...(typeof displayName === "string" ? { displayName } : {}),
      chunks: [],
      received: 0,
    });
    res.writeHead(200, {
      "content-type": "application/json; charset=UTF-8",
      "x-goog-upload-status": "active",
      "x-goog-upload-url": `${this.baseUrl()}/upload/v1beta/files?upload_id=${id}&upload_protocol=resumable`,
      "x-goog-upload-control-url": `${this.baseUrl()}/upload/v1beta/files?upload_id=${id}&upload_protocol=resumable`,
    });
    res.end();
  }

  private receive(
    req: IncomingMessage,
    chunk: Buffer,
    res: ServerResponse,
    uploadId: string,
    refuse: (problem: FileProblem) => void,
  ): void {
    const upload = this.uploads.get(uploadId);
    if (!upload) {
      refuse({ status: 404, message: "Upload session not found." });
      return;
    }
    const commands = (header(req, "x-goog-upload-command") ?? "").split(",").map((c) => c.trim());
    if (!commands.includes("upload")) {
      refuse({ status: 400, message: "X-Goog-Upload-Command must include upload." });
      return;
    }
    if (Number(header(req, "x-goog-upload-offset")) !== upload.received) {
      refuse({
        status: 400,
        message: `X-Goog-Upload-Offset must be ${upload.received}, the bytes received so far.`,
      });
      return;
    }
    upload.chunks.push(chunk);
    upload.received += chunk.byteLength;
    if (upload.received > upload.declared) {
      this.uploads.delete(uploadId);
      refuse({
        status: 400,
        message: "More bytes than X-Goog-Upload-Header-Content-Length.",
      });
      return;
    }
    if (!commands.includes("finalize")) {
      res.writeHead(200, { "x-goog-upload-status": "active" });
      res.end();
      return;
    }
    this.uploads.delete(uploadId);
    if (upload.received !== upload.declared) {
      refuse({
        status: 400,
        message: `Upload finalized after ${upload.received} of ${upload.declared} bytes.`,
      });
      return;
    }
    const file = this.create(upload);
    res.writeHead(200, {
      "content-type": "application/json; charset=UTF-8",
      "x-goog-upload-status": "final",
    });
    res.end(JSON.stringify({ file: this.describe(file) }));
  }

  private create(upload: Upload): FakeFile {
    const id = randomBytes(6).toString("hex");
    const now = Date.now();
    const video = upload.mimeType.startsWith("video/");
    const fails = video && this.failNextProcessing > 0;
    if (fails) this.failNextProcessing--;
    const file: FakeFile = {
      name: `files/${id}`,
      ...(upload.displayName === undefined ? {} : { displayName: upload.displayName }),
      mimeType: upload.mimeType,
      bytes: Buffer.concat(upload.chunks),
      uri: `${this.baseUrl()}/v1beta/files/${id}`,
      // Images, audio and documents are ready at once; videos are processed first.
      state: video ? "PROCESSING" : "ACTIVE",
      createTime: new Date(now).toISOString(),
      expirationTime: new Date(now + this.lifetimeMs).toISOString(),
      processingGets: this.processingGets,
      outcome: fails ? "FAILED" : "ACTIVE",
    };
    this.files.set(file.name, file);
    this.uploaded.push({ name: file.name, mimeType: file.mimeType, size: file.bytes.byteLength });
    return file;
  }

  private get(id: string, res: ServerResponse, refuse: (problem: FileProblem) => void): void {
    const file = this.live(`files/${id}`);
    if (!file) {
      refuse(fileGone(id));
      return;
    }
    if (file.state === "PROCESSING" && file.processingGets-- <= 0) file.state = file.outcome;
    res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
    res.end(JSON.stringify(this.describe(file)));
  }

  private describe(file: FakeFile): Record<string, unknown> {
    return {
      name: file.name,
      ...(file.displayName === undefined ? {} : { displayName: file.displayName }),
      mimeType: file.mimeType,
      sizeBytes: String(file.bytes.byteLength),
      createTime: file.createTime,
      updateTime: file.createTime,
      expirationTime: file.expirationTime,
      sha256Hash: Buffer.from(createHash("sha256").update(file.bytes).digest("hex")).toString(
        "base64",
      ),
      uri: file.uri,
      state: file.state,
      source: "UPLOADED",
      ...(file.state === "FAILED"
        ? { error: { code: 400, message: "The video could not be processed." } }
        : {}),
    };
  }
}
