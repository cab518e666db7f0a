import type { Content, Part, Tool, ToolConfig } from "@google/genai";

/** The generateContent body as the SDK sends it (the fake records it as parsed). */
export interface GenerateBody {
  contents: Content[];
  systemInstruction?: Content;
  tools?: Tool[];
  toolConfig?: ToolConfig;
  generationConfig?: Record<string, unknown>;
}

export interface RecordedRequest {
  /** `v1` (the SDK's default), `v1beta` or `v1alpha`. */
  apiVersion: string;
  /** Model id without the `models/` prefix, e.g. `gemini-3-flash-preview`. */
  model: string;
  body: GenerateBody;
  apiKey: string | undefined;
  at: number;
  /** Sent to `:streamGenerateContent?alt=sse` rather than `:generateContent`. */
  stream: boolean;
  /** Date.now() when a streamed answer's last chunk went out. */
  streamEndedAt?: number;
  /** Set when the fake's validation refused the request (it also lands in `rejections`). */
  rejection?: string;
}

/**
 * Whether the model may answer this request with a function call: it declares functions and does
 * not forbid them (function-calling mode NONE).
 */
export const mayCallFunctions = (request: RecordedRequest): boolean =>
  (request.body.tools ?? []).some((tool) => (tool.functionDeclarations?.length ?? 0) > 0) &&
  request.body.toolConfig?.functionCallingConfig?.mode !== "NONE";

export interface UsageOverride {
  promptTokenCount?: number;
  /** Of the prompt, what Gemini's implicit cache served; never more than promptTokenCount. */
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  /** What Gemini's own tools read (url_context's pages): in the total, not in the prompt. */
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
}

/**
 * A successful answer. `parts` empty ⇒ a candidate without content (what Gemini sends for a
 * safety stop); `promptBlockReason` ⇒ no candidate at all, only promptFeedback.
 */
export interface ReplyStep {
  kind: "reply";
  parts: Part[];
  finishReason?: string;
  promptBlockReason?: string;
  /** The candidate's groundingMetadata (Google Search) and urlContextMetadata (url_context). */
  grounding?: Record<string, unknown>;
  urlContext?: Record<string, unknown>;
  /** Parts of further candidates after the first (Gemini sends them when candidateCount > 1). */
  otherCandidates?: Part[][];
  usage?: UsageOverride;
  delayMs?: number;
  /** How a streamed request gets this answer (the fake's defaults otherwise). */
  stream?: StreamStepShape;
}

export interface StreamStepShape {
  chunkChars?: number;
  chunkDelayMs?: number;
  /** The connection drops after this many chunks, the way a network failure cuts a stream. */
  breakAfter?: number;
  /**
   * The stream ends cleanly after this many chunks, without the one that carries the finish
   * reason: what a proxy, or a connection closed at the wrong moment, leaves of an answer.
   */
  endAfter?: number;
  /**
   * After this many chunks comes one event whose data is not JSON (a broken proxy, a corrupted
   * stream), and the stream ends.
   */
  garbageAfter?: number;
  /** After this many chunks comes an error event (Gemini's error object, HTTP 200 already sent). */
  errorAfter?: {
    chunks: number;
    code: number;
    status: string;
    message: string;
    details?: unknown[];
  };
}

export interface ErrorStep {
  kind: "error";
  status: number;
  message: string;
  /** Sent as a google.rpc.RetryInfo detail, e.g. "2s" — how Gemini hints at a retry delay. */
  retryDelay?: string;
  delayMs?: number;
}

/** Never answers; the connection is only released by the client giving up or `close()`. */
export interface HangStep {
  kind: "hang";
}

export type StaticStep = ReplyStep | ErrorStep | HangStep;
export type Step = StaticStep | ((request: RecordedRequest) => StaticStep | Promise<StaticStep>);

export interface CallSpec {
  name: string;
  args?: Record<string, unknown>;
  id?: string;
}

const reply = (parts: Part[]): ReplyStep => ({ kind: "reply", parts });

export const text = (value: string): ReplyStep => reply([{ text: value }]);

export const thought = (value: string): ReplyStep => reply([{ text: value, thought: true }]);

export const calls = (specs: CallSpec[]): ReplyStep =>
  reply(
    specs.map(({ name, args = {}, id }) => ({
      functionCall: id === undefined ? { name, args } : { name, args, id },
    })),
  );

export const call = (
  name: string,
  args: Record<string, unknown> = {},
  options: { id?: string } = {},
): ReplyStep => calls([{ name, args, ...options }]);

/** Raw model content; function calls without a thoughtSignature still get one. */
export const content = (value: Content): ReplyStep => reply(value.parts ?? []);

/** The same answer, streamed in this shape. */
export const streamed = (step: ReplyStep, shape: StreamStepShape): ReplyStep => ({
  ...step,
  stream: { ...step.stream, ...shape },
});

/** A server-side tool Gemini ran inside the model call: its toolCall and toolResponse parts. */
export const serverTool = (
  toolType: string,
  args: Record<string, unknown>,
  response: Record<string, unknown>,
  id: string,
): ReplyStep =>
  // Gemini's enum values travel as plain strings.
  reply([
    { toolCall: { id, toolType, args } },
    { toolResponse: { id, toolType, response } },
  ] as Part[]);

/** Python Gemini wrote and ran with code_execution, and what it printed. */
export const codeRun = (code: string, output: string, id?: string): ReplyStep =>
  reply([
    { executableCode: { code, language: "PYTHON", ...(id ? { id } : {}) } },
    { codeExecutionResult: { outcome: "OUTCOME_OK", output, ...(id ? { id } : {}) } },
  ] as Part[]);

/** Concatenates the parts of several replies; later finishReason/usage/delay win. */
export function combine(...steps: ReplyStep[]): ReplyStep {
  const merged = reply(steps.flatMap((step) => step.parts));
  for (const { parts: _parts, ...options } of steps) Object.assign(merged, options);
  return merged;
}

export const empty = (finishReason = "SAFETY"): ReplyStep => ({ ...reply([]), finishReason });

export const blockedPrompt = (reason = "SAFETY"): ReplyStep => ({
  ...reply([]),
  promptBlockReason: reason,
});

const DEFAULT_MESSAGES: Record<number, string> = {
  400: "Request contains an invalid argument.",
  403: "The caller does not have permission",
  404: "Requested entity was not found.",
  429: "Resource has been exhausted (e.g. check quota).",
  500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  503: "The model is overloaded. Please try again later.",
  504: "Deadline expired before operation could complete.",
};

export const status = (
  code: number,
  message = DEFAULT_MESSAGES[code] ?? `HTTP ${code}`,
  options: { retryDelay?: string } = {},
): ErrorStep => ({ kind: "error", status: code, message, ...options });

export const hang = (): HangStep => ({ kind: "hang" });
