import type { Part } from "@google/genai";
import type { GenerateResult } from "./model-client.js";

/**
 * What a model answer means for the turn, judged from its finish reason and parts:
 * - `answer`: store it and go on (`cutNote` is added to the visible text when it ends the turn);
 * - `malformed`: a function call Gemini could not form; never stored or run, asked again once;
 * - `failed`: nothing usable (a refusal, an empty answer, no room left for one); nothing of it is
 *   stored, so the history never replays words Gemini did not say, and the user reads `message`.
 */
export type Verdict =
  | { kind: "answer"; cutNote?: string }
  | { kind: "malformed"; detail: string }
  | { kind: "failed"; reason: string; message: string };

export const CUT_NOTE = "(cut off: the answer reached the model's output limit)";
export const STREAM_CUT_NOTE =
  "(cut off: the connection to Gemini ended before the answer was finished; ask again for the rest)";
export const MALFORMED_TWICE =
  "Gemini twice tried to use a tool in a way that could not be understood, so I stopped. Please ask again, perhaps in other words.";

const MALFORMED_REASONS = new Set(["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"]);
const CUT_REASONS = new Set(["MAX_TOKENS", "CONTINUATION"]);
const NORMAL_REASONS = new Set(["STOP", "FINISH_REASON_UNSPECIFIED"]);

const REFUSALS: Record<string, string> = {
  SAFETY: "Gemini stopped this answer for safety reasons (SAFETY). Try asking in another way.",
  RECITATION:
    "Gemini stopped this answer because it was repeating a source too closely (RECITATION). Try asking for a summary in your own terms.",
  PROHIBITED_CONTENT:
    "Gemini stopped this answer because it may hold prohibited content (PROHIBITED_CONTENT).",
  BLOCKLIST: "Gemini stopped this answer because it held a blocked term (BLOCKLIST).",
  SPII: "Gemini stopped this answer because it may hold sensitive personal data (SPII).",
  LANGUAGE: "Gemini stopped this answer: the language is not supported (LANGUAGE).",
  TOO_MANY_TOOL_CALLS:
    "Gemini stopped after calling too many of its own tools in a row (TOO_MANY_TOOL_CALLS). Try a narrower question.",
};

const visible = (parts: readonly Part[]): boolean =>
  parts.some((p) => !p.thought && typeof p.text === "string" && p.text.trim() !== "");

/** Everything Gemini returns as an answer except bare text and thoughts. */
const acts = (parts: readonly Part[]): boolean =>
  parts.some((p) =>
    Object.keys(p).some((key) => !["text", "thought", "thoughtSignature"].includes(key)),
  );

export function judgeAnswer(result: GenerateResult): Verdict {
  if (result.blockReason !== undefined) {
    return {
      kind: "failed",
      reason: `prompt blocked: ${result.blockReason}`,
      message: `Gemini refused to read this message: it was blocked (${result.blockReason}). Try asking in another way; /clear starts the chat afresh if it keeps happening.`,
    };
  }
  const parts = result.content.parts ?? [];
  const reason = result.finishReason ?? "STOP";
  const nameless = parts.find((p) => p.functionCall !== undefined && !p.functionCall.name);
  if (MALFORMED_REASONS.has(reason) || nameless) {
    return { kind: "malformed", detail: nameless ? "a function call without a name" : reason };
  }
  if (result.cut) {
    if (visible(parts)) return { kind: "answer", cutNote: STREAM_CUT_NOTE };
    if (acts(parts)) return { kind: "answer" };
    return {
      kind: "failed",
      reason: "the stream ended before any answer",
      message: "Gemini's answer broke off before it began. Please ask again.",
    };
  }
  if (CUT_REASONS.has(reason)) {
    if (visible(parts)) return { kind: "answer", cutNote: CUT_NOTE };
    if (acts(parts)) return { kind: "answer" };
    return {
      kind: "failed",
      reason,
      message:
        "Gemini ran out of room while thinking and wrote no answer. Ask again, perhaps for less at once.",
    };
  }
  if (!NORMAL_REASONS.has(reason)) {
    return {
      kind: "failed",
      reason,
      message: REFUSALS[reason] ?? `Gemini stopped without an answer (${reason}).`,
    };
  }
  if (!visible(parts) && !acts(parts)) {
    return {
      kind: "failed",
      reason: "empty answer",
      message: "Gemini sent an empty answer. Please ask again.",
    };
  }
  return { kind: "answer" };
}
