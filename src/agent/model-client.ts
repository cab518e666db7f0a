import type { Content, FunctionDeclaration } from "@google/genai";
import type { ThinkingLevel } from "../config.js";

/** Tokens of one model call, or summed over a turn's calls. */
export type Usage = {
  promptTokens: number;
  /** Visible answer plus thinking: both are billed as output. */
  outputTokens: number;
};

export type GenerateRequest = {
  model: string;
  systemInstruction?: string;
  contents: Content[];
  tools?: FunctionDeclaration[];
  /** GEMINI_THINKING_LEVEL; the client turns it into what the model understands. */
  thinkingLevel?: ThinkingLevel;
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
};

/**
 * The one thing the agent and the compactor need from Gemini (src/agent/gemini-client.ts provides
 * it; tests and benchmarks wrap it).
 */
export interface ModelClient {
  generate(request: GenerateRequest): Promise<GenerateResult>;
}
