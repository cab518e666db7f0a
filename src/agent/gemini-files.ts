import type { File as GeminiFile } from "@google/genai";
import type { Logger } from "pino";
import { nextRetryDelay, type Random, type RetryBudget } from "../retry/backoff.js";
import { describeFailure, GeminiRefusedError, GeminiUnavailableError } from "./gemini-errors.js";
import { GEMINI_API_URL, lazyGenAi } from "./genai-sdk.js";

/** A file Gemini holds and a request may name by its uri. */
export type UploadedFile = { name: string; uri: string; mimeType: string; expiresAt: string };

/**
 * Gemini will not take the file (it refused it, or could not process it): uploading it again
 * would fail the same way, so the caller describes it instead. A refused API key is no such
 * refusal: it fails with GeminiRefusedError.
 */
export class GeminiFileRefusedError extends Error {
  constructor(readonly reason: string) {
    super(`Gemini refused the file: ${reason}`);
    this.name = "GeminiFileRefusedError";
  }
}

/**
 * A file Gemini had not finished processing in time (a long video): like a refused one, it is
 * described in words, but only for a while, then asked after again.
 */
export class GeminiFileNotReadyError extends GeminiFileRefusedError {
  constructor(
    reason: string,
    /** The upload Gemini goes on processing: the next look asks after it, not uploads again. */
    readonly file: Pick<UploadedFile, "name" | "uri" | "mimeType">,
  ) {
    super(reason);
    this.name = "GeminiFileNotReadyError";
  }
}

export interface GeminiFiles {
  /**
   * Uploads the bytes through the Files API (the resumable protocol, 8 MB a request) and waits
   * until Gemini has processed them (videos take a while). Throws GeminiFileRefusedError
   * (GeminiFileNotReadyError when processing takes too long), or GeminiUnavailableError when
   * Gemini could not be reached within the retries.
   */
  upload(bytes: Buffer, mimeType: string, displayName: string): Promise<UploadedFile>;
  /**
   * Where an upload Gemini was still processing stands: the file once it is ready, "processing"
   * while it is not, undefined when Gemini no longer has it. Throws GeminiFileRefusedError when
   * its processing failed.
   */
  check(name: string): Promise<UploadedFile | "processing" | undefined>;
}

export type GeminiFilesDeps = {
  apiKey: string;
  baseUrl?: string;
  logger: Logger;
  /** Per HTTP request of an upload (one 8 MB chunk) or a status check. */
  timeoutMs?: number;
  /** Between two status checks of a file Gemini is processing. */
  pollMs?: number;
  /** How long a file may take to process before the upload counts as failed for now. */
  maxProcessingMs?: number;
  retry?: Partial<RetryBudget>;
  sleep?: (ms: number) => Promise<void>;
  random?: Random;
};

const DEFAULTS = {
  timeoutMs: 120_000,
  pollMs: 2_000,
  maxProcessingMs: 180_000,
  retry: { maxAttempts: 4, baseMs: 500, maxMs: 8_000, maxTotalMs: 60_000 },
};

const defaultSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

export function createGeminiFiles(deps: GeminiFilesDeps): GeminiFiles {
  const budget: RetryBudget = { ...DEFAULTS.retry, ...deps.retry };
  const sleep = deps.sleep ?? defaultSleep;
  const random = deps.random ?? Math.random;
  const timeoutMs = deps.timeoutMs ?? DEFAULTS.timeoutMs;
  const pollMs = deps.pollMs ?? DEFAULTS.pollMs;
  const maxProcessingMs = deps.maxProcessingMs ?? DEFAULTS.maxProcessingMs;
  // The SDK's upload takes no abort signal, so every request it makes gets its deadline here.
  const timedFetch: typeof fetch = (input, init) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    return fetch(input, { ...init, signal });
  };
  const loadSdk = lazyGenAi({ apiKey: deps.apiKey, baseUrl: deps.baseUrl, fetch: timedFetch });

  /** One Files API call with retries; a refusal (4xx) ends it with GeminiFileRefusedError. */
  async function withRetries<T>(what: string, call: () => Promise<T>): Promise<T> {
    const { apiError } = await loadSdk();
    let spentMs = 0;
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      try {
        return await call();
      } catch (error) {
        spentMs += Date.now() - started;
        const failure = describeFailure(error, deps.apiKey, apiError, {
          url: deps.baseUrl ?? GEMINI_API_URL,
          timeoutMs,
        });
        if (!failure.retryable) {
          // A refused key refuses every file: the turn fails and says so, nothing is recorded.
          if (failure.status === 401 || failure.status === 403 || /API key/i.test(failure.reason))
            throw new GeminiRefusedError(failure.reason, failure.status);
          throw new GeminiFileRefusedError(failure.reason);
        }
        const delayMs = nextRetryDelay(attempt, spentMs, budget, random, failure.retryAfterMs);
        if (delayMs === undefined) {
          throw new GeminiUnavailableError(
            `${what}: ${failure.reason}`,
            attempt,
            failure.status,
            failure.cause,
          );
        }
        deps.logger.warn({ attempt, reason: failure.reason, delayMs }, `${what} failed; retrying`);
        await sleep(delayMs);
        spentMs += delayMs;
      }
    }
  }

  function uploaded(file: GeminiFile, mimeType: string): UploadedFile {
    if (!file.name || !file.uri || !file.expirationTime) {
      throw new GeminiFileRefusedError("Gemini answered the upload without a file name or uri");
    }
    return {
      name: file.name,
      uri: file.uri,
      mimeType: file.mimeType ?? mimeType,
      expiresAt: file.expirationTime,
    };
  }

  async function upload(bytes: Buffer, mimeType: string, displayName: string) {
    const { ai } = await loadSdk();
    let file = await withRetries("uploading a file to Gemini", () =>
      ai.files.upload({ file: new Blob([bytes]), config: { mimeType, displayName } }),
    );
    const started = Date.now();
    while (file.state === "PROCESSING") {
      if (Date.now() - started > maxProcessingMs) {
        const { name, uri } = uploaded(file, mimeType);
        throw new GeminiFileNotReadyError(
          `Gemini was still processing it after ${Math.round(maxProcessingMs / 1000)} s`,
          { name, uri, mimeType: file.mimeType ?? mimeType },
        );
      }
      await sleep(pollMs);
      const name = file.name ?? "";
      file = await withRetries("checking an uploaded file", () => ai.files.get({ name }));
    }
    if (file.state === "FAILED") {
      throw new GeminiFileRefusedError(file.error?.message ?? "Gemini could not process the file");
    }
    return uploaded(file, mimeType);
  }

  async function check(name: string): Promise<UploadedFile | "processing" | undefined> {
    const { ai } = await loadSdk();
    let file: GeminiFile;
    try {
      file = await withRetries("checking an uploaded file", () => ai.files.get({ name }));
    } catch (error) {
      // Deleted, or another project's: uploaded again.
      if (error instanceof GeminiRefusedError && (error.status === 403 || error.status === 404)) {
        return undefined;
      }
      throw error;
    }
    if (file.state === "PROCESSING") return "processing";
    if (file.state === "FAILED") {
      throw new GeminiFileRefusedError(file.error?.message ?? "Gemini could not process the file");
    }
    return uploaded(file, file.mimeType ?? "");
  }

  return { upload, check };
}
