import { readFile, stat } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { type Api, GrammyError } from "grammy";
import { NO_REDIRECTS } from "../../http/no-redirects.js";
import { byteSize } from "../../session/media-text.js";

/**
 * A download that receives nothing for this long is given up, for the inbox to retry: without it
 * a stalled one held its chat for Node's five minutes of waiting for headers, and one that stalled
 * in the middle held it for good. A deadline for the whole file would not do: from a local Bot API
 * server (TELEGRAM_API_ROOT) it may be gigabytes.
 */
export const DOWNLOAD_STALL_MS = 30_000;

/** Telegram's own limit on files bots may download from its cloud Bot API. */
export const TELEGRAM_DOWNLOAD_LIMIT_BYTES = 20 * 1024 * 1024;

/** The file is larger than Koroku or Telegram lets it fetch: told to the user, never retried. */
export class FileTooBigError extends Error {
  constructor(
    readonly limitBytes: number,
    readonly sizeBytes: number | undefined,
  ) {
    super(`file of ${sizeBytes ?? "unknown"} bytes is over the ${limitBytes}-byte limit`);
    this.name = "FileTooBigError";
  }
}

/** Telegram says the file cannot be had (expired, deleted, a bad id): told, never retried. */
export class FileUnavailableError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "FileUnavailableError";
  }
}

export type DownloadFile = (fileId: string, knownSize?: number) => Promise<Buffer>;

/** What the user is told when a file is too big, with what they can do about it. */
export function tooBigText(error: FileTooBigError, name: string): string {
  const size = error.sizeBytes === undefined ? "" : ` (${byteSize(error.sizeBytes)})`;
  const limit = byteSize(error.limitBytes);
  const more =
    error.limitBytes >= TELEGRAM_DOWNLOAD_LIMIT_BYTES
      ? ` Bots can fetch at most ${byteSize(TELEGRAM_DOWNLOAD_LIMIT_BYTES)} from Telegram; for larger files the operator can run a local Bot API server (TELEGRAM_API_ROOT) and raise MEDIA_MAX_BYTES.`
      : " The operator can raise MEDIA_MAX_BYTES.";
  return `Your ${name}${size} is larger than the ${limit} I can take, so I did not read it. Please send it smaller (compressed, shorter, or split).${more}`;
}

/**
 * Fetches a file a user sent: getFile, then the file under TELEGRAM_API_ROOT, or — from a local
 * Bot API server in --local mode, which answers with an absolute path on its own disk — the file
 * itself. A transient failure (network, 5xx) is thrown as it is, for the inbox to retry.
 */
export function createFileDownloader(deps: {
  api: Api;
  apiRoot: string;
  maxBytes: number;
  /** In place of DOWNLOAD_STALL_MS (tests). */
  stallMs?: number;
}): DownloadFile {
  const { maxBytes } = deps;

  async function readLocal(path: string): Promise<Buffer> {
    const { size } = await stat(path);
    if (size > maxBytes) throw new FileTooBigError(maxBytes, size);
    return readFile(path);
  }

  async function readRemote(path: string): Promise<Buffer> {
    const url = `${deps.apiRoot}/file/bot${deps.api.token}/${path}`;
    const stallMs = deps.stallMs ?? DOWNLOAD_STALL_MS;
    const stalled = new AbortController();
    // The token is in the URL: the errors name neither.
    const timer = setTimeout(
      () =>
        stalled.abort(
          new Error(`downloading a file from Telegram stalled: nothing came for ${stallMs} ms`),
        ),
      stallMs,
    );
    try {
      const response = await fetch(url, { signal: stalled.signal, ...NO_REDIRECTS });
      if (response.status === 404 || response.status === 400) {
        await response.body?.cancel();
        throw new FileUnavailableError(`Telegram answered ${response.status} for the file`);
      }
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        throw new Error(`downloading a file from Telegram failed with HTTP ${response.status}`);
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        timer.refresh();
        size += chunk.byteLength;
        if (size > maxBytes) {
          await response.body.cancel().catch(() => {});
          throw new FileTooBigError(maxBytes, undefined);
        }
        chunks.push(chunk);
      }
      return Buffer.concat(chunks, size);
    } catch (error) {
      // fetch and the body's reads fail with an AbortError of their own: the stall says why.
      const cut = stalled.signal.aborted && error instanceof Error && error.name === "AbortError";
      throw cut ? stalled.signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
  }

  return async (fileId, knownSize) => {
    if (knownSize !== undefined && knownSize > maxBytes)
      throw new FileTooBigError(maxBytes, knownSize);
    let file: Awaited<ReturnType<Api["getFile"]>>;
    try {
      file = await deps.api.getFile(fileId);
    } catch (error) {
      if (error instanceof GrammyError && error.error_code === 400) {
        if (/too big/i.test(error.description)) {
          throw new FileTooBigError(Math.min(maxBytes, TELEGRAM_DOWNLOAD_LIMIT_BYTES), knownSize);
        }
        throw new FileUnavailableError(error.description);
      }
      throw error;
    }
    if (file.file_size !== undefined && file.file_size > maxBytes) {
      throw new FileTooBigError(maxBytes, file.file_size);
    }
    if (!file.file_path) throw new FileUnavailableError("Telegram gave no path for the file");
    return isAbsolute(file.file_path) ? readLocal(file.file_path) : readRemote(file.file_path);
  };
}
