import type { ApiError } from "@google/genai";

export type GeminiErrorKind = "refused" | "unavailable";

/** A Gemini call that failed for good; `userMessage` is safe to show in the chat. */
export class GeminiError extends Error {
  readonly kind: GeminiErrorKind;
  readonly userMessage: string;
  readonly status: number | undefined;

  constructor(kind: GeminiErrorKind, userMessage: string, detail: string, status?: number) {
    super(detail);
    this.name = "GeminiError";
    this.kind = kind;
    this.userMessage = userMessage;
    this.status = status;
  }
}

/** Gemini answered but will not do it (4xx): retrying the same request cannot help. */
export class GeminiRefusedError extends GeminiError {
  /**
   * Gemini refused what the request holds (a 400 INVALID_ARGUMENT: a file it cannot decode,
   * say), not the API key or the account: the same input would be refused again.
   */
  readonly inputRefused: boolean;
  /** Gemini's words, short, single-line and free of the API key. */
  readonly reason: string;

  constructor(reason: string, status?: number, inputRefused = false) {
    const statusText = status === undefined ? "" : ` (HTTP ${status})`;
    super(
      "refused",
      `Gemini refused the request: ${reason}`,
      `Gemini refused the request${statusText}: ${reason}`,
      status,
    );
    this.inputRefused = inputRefused;
    this.reason = reason;
    this.name = "GeminiRefusedError";
  }
}

/** Gemini did not answer usefully within the retry budget (overload, quota, timeouts, network). */
export class GeminiUnavailableError extends GeminiError {
  /** The last attempt's failure, without the attempts: what the terminal chat shows. */
  readonly reason: string;

  /** `cause`, when known, is said to the user in plain words ("connection refused"). */
  constructor(reason: string, attempts: number, status?: number, cause?: string) {
    super(
      "unavailable",
      cause === undefined
        ? "Gemini is unavailable, try again in a minute."
        : `Gemini is unavailable (${cause}), try again in a minute.`,
      `Gemini is unavailable after ${attempts} attempt(s): ${reason}`,
      status,
    );
    this.name = "GeminiUnavailableError";
    this.reason = reason;
  }
}

/**
 * Gemini answered with a part the history cannot hold, named by its field. Asking again would
 * cost another model call for the same answer, so the user is told at once.
 */
export class GeminiUnsupportedAnswerError extends GeminiError {
  constructor(detail: string, field: string) {
    super(
      "refused",
      `Gemini answered with something I cannot handle yet (a part holding "${field}"). Please ask in another way.`,
      `Gemini's answer cannot be stored: ${detail}`,
    );
    this.name = "GeminiUnsupportedAnswerError";
  }
}

/**
 * Gemini (or a proxy in front of it) sent more than Koroku keeps: nothing of it is stored, and
 * asking the same again would likely send as much again, so the user is told at once.
 */
export class GeminiAnswerTooLargeError extends GeminiError {
  constructor(what: string, maxBytes: number) {
    const limit =
      maxBytes >= 1024 * 1024
        ? `${Math.round(maxBytes / (1024 * 1024))} MB`
        : `${Math.round(maxBytes / 1024)} KB`;
    super(
      "refused",
      `Gemini's answer was larger than the ${limit} I can keep, so I dropped it. Please ask for something smaller (for instance, a file in parts).`,
      `${what} was larger than ${maxBytes} bytes`,
    );
    this.name = "GeminiAnswerTooLargeError";
  }
}

/** What the retry loop needs to know about one failed attempt. */
export interface Failure {
  retryable: boolean;
  /** Short, single-line and free of the API key. */
  reason: string;
  /** What went wrong in a few plain words for the user, when it is known ("connection refused"). */
  cause?: string;
  status?: number;
  /** Gemini's own google.rpc.RetryInfo hint, when it sent one. */
  retryAfterMs?: number;
  /** A 400 about thought signatures: the history may be repaired with the placeholder. */
  signatureProblem: boolean;
  /** A 400 about what the request holds (see GeminiRefusedError.inputRefused). */
  inputRefused?: boolean;
}

/** Where the failed request went, for a reason that names it. */
export interface FailedRequest {
  /** GEMINI_BASE_URL, or Gemini's own address. */
  url: string;
  /** The deadline of one attempt. */
  timeoutMs?: number;
}

const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
const MAX_REASON_LENGTH = 200;
// Connection-level failures from undici/Node: the request may not have reached Gemini at all.
const NETWORK_MESSAGES = /fetch failed|terminated|socket hang up|other side closed/i;
/** Error codes of the network, in the words the user is told. */
const NETWORK_CAUSES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "its address could not be looked up (DNS)",
  EAI_AGAIN: "its address could not be looked up (DNS)",
  ETIMEDOUT: "connecting timed out",
  UND_ERR_CONNECT_TIMEOUT: "connecting timed out",
  ECONNRESET: "the connection was reset",
  UND_ERR_SOCKET: "the connection broke off",
  EHOSTUNREACH: "no route to it",
  ENETUNREACH: "no network route to it",
};
// The SDK's words when an event of a stream is not JSON, or the stream ends inside one.
const UNREADABLE_STREAM = /exception parsing stream chunk|Incomplete JSON segment/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null;

function shorten(text: string, secret: string): string {
  const redacted = secret === "" ? text : text.split(secret).join("[redacted]");
  const oneLine = redacted.replace(/\s+/g, " ").trim();
  return oneLine.length > MAX_REASON_LENGTH
    ? `${oneLine.slice(0, MAX_REASON_LENGTH - 1)}…`
    : oneLine;
}

/** "2s" / "1.5s" → ms, the protobuf Duration JSON form Gemini uses in RetryInfo. */
function parseDuration(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value);
  return match?.[1] === undefined ? undefined : Math.round(Number(match[1]) * 1000);
}

function retryDelayOf(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  const info = details.find(
    (detail) => isRecord(detail) && String(detail["@type"]).endsWith("google.rpc.RetryInfo"),
  );
  return isRecord(info) ? parseDuration(info.retryDelay) : undefined;
}

type ErrorBody = { message?: string; status?: string; details?: unknown };

/**
 * The SDK's ApiError carries the response body as JSON text in `message`, not the headers; an
 * error event inside a stream as "got status: RESOURCE_EXHAUSTED. {json}".
 */
function parseApiErrorBody(message: string): ErrorBody {
  try {
    const body: unknown = JSON.parse(message.replace(/^got status: [^.{]*\. (?=\{)/, ""));
    const error = isRecord(body) ? body.error : undefined;
    if (!isRecord(error)) return {};
    return {
      ...(typeof error.message === "string" ? { message: error.message } : {}),
      ...(typeof error.status === "string" ? { status: error.status } : {}),
      details: error.details,
    };
  } catch {
    return { message };
  }
}

/** google.rpc.ErrorInfo's reason, e.g. API_KEY_INVALID. */
function errorInfoReason(details: unknown): string | undefined {
  if (!Array.isArray(details)) return undefined;
  const info = details.find(
    (detail) => isRecord(detail) && String(detail["@type"]).endsWith("google.rpc.ErrorInfo"),
  );
  return isRecord(info) && typeof info.reason === "string" ? info.reason : undefined;
}

/**
 * A 400 about the request's content. A bad API key is a 400 INVALID_ARGUMENT too (ErrorInfo
 * API_KEY_INVALID); an unsupported location is FAILED_PRECONDITION. Neither is the input's fault.
 */
function refusesInput(status: number, body: ErrorBody, reason: string, signature: boolean) {
  if (status !== 400 || signature) return false;
  if (body.status !== undefined && body.status !== "INVALID_ARGUMENT") return false;
  // A field of Koroku's own request (an MCP tool's schema Gemini cannot take, say) is no fault
  // of what the user sent, and setting it aside would not help the next message either.
  if (
    /\b(tools|tool_config|toolConfig|generation_config|generationConfig|system_instruction|systemInstruction)\b/.test(
      reason,
    )
  ) {
    return false;
  }
  return errorInfoReason(body.details) !== "API_KEY_INVALID" && !/API key/i.test(reason);
}

/**
 * Gemini refused a request longer than the model reads: the conversation's history, or the
 * message itself (a text file of megabytes), past the context window.
 */
export const exceedsContext = (error: unknown): boolean =>
  error instanceof GeminiRefusedError &&
  /input token count|exceeds the maximum number of tokens/i.test(error.reason);

function describeApiError(error: ApiError, secret: string): Failure {
  const body = parseApiErrorBody(error.message);
  const reason = shorten(body.message ?? `HTTP ${error.status}`, secret);
  const retryAfterMs = retryDelayOf(body.details);
  const signatureProblem = error.status === 400 && /thought[ _]?signature/i.test(reason);
  return {
    retryable: RETRYABLE_STATUSES.has(error.status),
    reason,
    status: error.status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    signatureProblem,
    inputRefused: refusesInput(error.status, body, reason, signatureProblem),
  };
}

function isTransportError(error: Error): boolean {
  if (error.name === "AbortError" || error.name === "TimeoutError") return true;
  return NETWORK_MESSAGES.test(error.message) || errnoOf(error) !== undefined;
}

/** The innermost error below `error` that carries an errno-style code (ECONNREFUSED, ENOTFOUND). */
function errnoOf(error: Error): { code: string; message: string } | undefined {
  let found: { code: string; message: string } | undefined;
  let current: unknown = error.cause;
  for (let depth = 0; isRecord(current) && depth < 8; depth++) {
    if (typeof current.code === "string") {
      found = { code: current.code, message: String(current.message ?? current.code) };
    }
    current = current.cause;
  }
  return found;
}

/** A failure of the network, naming what failed and where (refused, DNS, timeout). */
function describeTransportError(error: Error, secret: string, where: FailedRequest): Failure {
  const url = where.url.replace(/\/+$/, "");
  if (error.name === "AbortError" || error.name === "TimeoutError") {
    const limit = where.timeoutMs === undefined ? "" : ` of ${where.timeoutMs / 1000} s`;
    return {
      retryable: true,
      reason: shorten(`no answer from ${url} before the timeout${limit}`, secret),
      cause: "it did not answer in time",
      signatureProblem: false,
    };
  }
  const errno = errnoOf(error);
  const cause = errno === undefined ? undefined : NETWORK_CAUSES[errno.code];
  const detail = errno === undefined ? error.message : `${errno.code}: ${errno.message}`;
  return {
    retryable: true,
    reason: shorten(`could not reach ${url}: ${cause ?? "network error"} (${detail})`, secret),
    cause: cause ?? "it could not be reached",
    signatureProblem: false,
  };
}

/** An answer that is not the JSON Gemini sends: a broken proxy, or a corrupted stream. */
function isUnreadableAnswer(error: Error): boolean {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof SyntaxError || UNREADABLE_STREAM.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * Classifies anything the SDK throws; `secret` (the API key) never reaches the reason. The SDK's
 * ApiError class is passed in by the client, which loads the SDK only when it first needs it.
 */
export function describeFailure(
  error: unknown,
  secret: string,
  apiError: typeof ApiError,
  where: FailedRequest = { url: "GEMINI_BASE_URL" },
): Failure {
  if (error instanceof apiError) return describeApiError(error, secret);
  if (error instanceof Error && isTransportError(error)) {
    return describeTransportError(error, secret, where);
  }
  // The parser's words go to the log only; asked again, Gemini most likely answers properly.
  if (error instanceof Error && isUnreadableAnswer(error)) {
    return {
      retryable: true,
      reason: shorten(`Gemini's answer could not be read: ${error.message}`, secret),
      cause: "its answer came garbled",
      signatureProblem: false,
    };
  }
  // Anything else is the SDK refusing our input before sending it (e.g. "contents are required").
  const message = error instanceof Error ? error.message : String(error);
  return { retryable: false, reason: shorten(message, secret), signatureProblem: false };
}
