import type { Content, FunctionDeclaration } from "@google/genai";
import type { BuiltinTool, ThinkingLevel } from "../config.js";

/** Tokens of one model call, or summed over a turn's calls. */
export type Usage = {
  promptTokens: number;
  /** Of the prompt, what Gemini served from its cache (billed at a fraction). */
  cachedTokens: number;
  /** Visible answer plus thinking: both are billed as output. */
  outputTokens: number;
  /** Of the output, the thinking. */
  thoughtsTokens: number;
  /**
   * What Gemini's own tools read (url_context's pages, google_search's results): billed as
   * input, but no part of the context, so kept apart from the prompt that sizes it.
   */
  toolUseTokens: number;
};

/** The input Gemini bills: the prompt and what its own tools read. */
export const billedInputTokens = (usage: Usage): number => usage.promptTokens + usage.toolUseTokens;

/** Told as a streamed answer arrives. */
export type StreamObserver = {
  /** The visible answer so far (thought parts never shown), each time it grew. */
  onText(text: string): void;
  /** An attempt failed after its first chunk: the answer starts over from nothing. */
  onRestart(): void;
};

export const NO_USAGE: Readonly<Usage> = Object.freeze({
  promptTokens: 0,
  cachedTokens: 0,
  outputTokens: 0,
  thoughtsTokens: 0,
  toolUseTokens: 0,
});

/** Adds `more` into `total`. */
export function addUsage(total: Usage, more: Usage): void {
  total.promptTokens += more.promptTokens;
  total.cachedTokens += more.cachedTokens;
  total.outputTokens += more.outputTokens;
  total.thoughtsTokens += more.thoughtsTokens;
  total.toolUseTokens += more.toolUseTokens;
}

export type GenerateRequest = {
  model: string;
  systemInstruction?: string;
  contents: Content[];
  tools?: FunctionDeclaration[];
  /**
   * "none": the model may not call `tools` this time (Gemini's function-calling mode NONE). They
   * stay declared, so the request's prefix stays what the earlier ones had.
   */
  functionCalling?: "none";
  /** Gemini's server-side tools, offered beside `tools`. */
  builtinTools?: readonly BuiltinTool[];
  /** GEMINI_THINKING_LEVEL; the client turns it into what the model understands. */
  thinkingLevel?: ThinkingLevel;
  /**
   * What the model answers in besides text: speech in one of Gemini's prebuilt voices (a TTS
   * model, which returns PCM audio), or pictures (an image model). Unset: text.
   */
  output?: { kind: "speech"; voice: string } | { kind: "image" };
  /** Streams the answer (generateContentStream) and reports it as it grows. */
  stream?: StreamObserver;
  /**
   * The user stopped the answer: the stream is aborted, nothing is retried, and what arrived so
   * far comes back with `stopped`.
   */
  stop?: AbortSignal;
};

export type GenerateResult = {
  /**
   * The model's turn (the first candidate's); without parts when Gemini gave no content (safety
   * stop, blocked prompt).
   */
  content: Content;
  usage: Usage;
  /** Why the model stopped (STOP, MAX_TOKENS, SAFETY, …). */
  finishReason?: string;
  /** Set when Gemini refused the prompt itself (promptFeedback.blockReason): no candidate then. */
  blockReason?: string;
  /** The answer was cut short by `stop`; `content` holds what had arrived. */
  stopped?: true;
  /**
   * The stream ended cleanly before Gemini said why it finished (no finishReason: a proxy or a
   * connection that dropped the rest); `content` holds what had arrived.
   */
  cut?: true;
  /** The candidate's groundingMetadata and urlContextMetadata, as Gemini sent them. */
  grounding?: { metadata?: object; urlContext?: object };
};

/**
 * The one thing the agent and the compactor need from Gemini (src/agent/gemini-client.ts provides
 * it; tests and benchmarks wrap it).
 */
export interface ModelClient {
  generate(request: GenerateRequest): Promise<GenerateResult>;
}
