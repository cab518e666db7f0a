import type { ApiError, GoogleGenAI } from "@google/genai";
import { withoutRedirects } from "../http/no-redirects.js";

/** Where the SDK sends requests when GEMINI_BASE_URL is not set (named in network failures). */
export const GEMINI_API_URL = "https://generativelanguage.googleapis.com";

export type GenAiSdk = { ai: GoogleGenAI; apiError: typeof ApiError };

/**
 * The Gemini SDK, loaded on first use. Loading it takes a tenth of a second, a seventh of the
 * service's start-up, and nothing before the first model call needs it: the service answers
 * /healthz and stores updates first. Our own loops retry, so the SDK's retryOptions stay unset
 * (it then sends one request). Gemini sends no redirects: they are refused (src/http/no-redirects.ts).
 */
export function lazyGenAi(options: {
  apiKey: string;
  baseUrl?: string | undefined;
  fetch: typeof fetch;
}): () => Promise<GenAiSdk> {
  let sdk: Promise<GenAiSdk> | undefined;
  return () =>
    (sdk ??= import("@google/genai").then(({ GoogleGenAI, ApiError }) => ({
      ai: new GoogleGenAI({
        apiKey: options.apiKey,
        vertexai: false,
        httpOptions: {
          ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
          fetch: withoutRedirects(options.fetch),
        },
      }),
      apiError: ApiError,
    })));
}

/**
 * The abort signal of one SDK request: it aborts `timeoutMs` from now (or from the last
 * `refresh`), or when `stop` does. A controller of our own, disposed when the request ends, rather
 * than AbortSignal.timeout or AbortSignal.any: the SDK leaves its listener on the signal it is
 * given, which would keep the request in memory until the deadline, or as long as `stop` lives.
 */
export function requestSignal(timeoutMs: number, stop: AbortSignal | undefined) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const abort = () => controller.abort();
  stop?.addEventListener("abort", abort);
  return {
    signal: controller.signal,
    /** The deadline starts again (a stream whose chunks keep coming). */
    refresh(): void {
      timer.refresh();
    },
    dispose(): void {
      clearTimeout(timer);
      stop?.removeEventListener("abort", abort);
    },
  };
}
