/**
 * Gemini's implicit caching, as the fake plays it. Gemini reuses the longest prefix a request
 * shares with recent requests of the same API key and model, when that prefix is at least the
 * model's minimum, and reports it as `usageMetadata.cachedContentTokenCount` (part of
 * `promptTokenCount`, billed at a fraction).
 *
 * The fake reads a request as Gemini's prompt runs: the system instruction, then the tools, then
 * the contents in order; a prompt is the JSON of those, and its tokens are its characters / 4, as
 * the fake counts every prompt. Generation settings (thinking, toolConfig) are not prompt text.
 */
import type { GenerateBody } from "./gemini-steps.js";

/**
 * The minimum prefix Gemini caches, per model (ai.google.dev/gemini-api/docs/caching): 2,048
 * tokens for 2.5 Flash and Pro, 1,024 for gemini-3-flash-preview, 4,096 for 3.1 Pro and every
 * later Flash; no implicit caching before 2.5. Ids the fake does not know are taken for the
 * newest models.
 */
export function implicitCacheMinimum(model: string): number | undefined {
  const id = model.replace(/^models\//, "");
  if (/^gemini-(1\.|2\.0)/.test(id)) return undefined;
  if (/^gemini-2\.5-/.test(id)) return 2_048;
  if (id === "gemini-3-flash-preview") return 1_024;
  return 4_096;
}

/** The prompt as Gemini reads it, as one string whose common prefixes are compared. */
export function promptText(body: GenerateBody): string {
  const pieces = [body.systemInstruction, body.tools, body.contents];
  return pieces
    .filter((piece) => piece !== undefined)
    .map((piece) => JSON.stringify(piece))
    .join("");
}

export const tokensOfText = (text: string): number => Math.ceil(text.length / 4);

// Compared a block at a time: a block is a slice of a flat string, and equal blocks compare as
// memory, so a prompt of megabytes of inline media costs the fake little.
const BLOCK = 4_096;

function commonPrefixLength(a: string, b: string): number {
  const end = Math.min(a.length, b.length);
  let i = 0;
  while (i + BLOCK <= end && a.slice(i, i + BLOCK) === b.slice(i, i + BLOCK)) i += BLOCK;
  while (i < end && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

// Several recent prompts per key and model, like Gemini, which keeps caches for a few minutes: a
// conversation's turn still finds its prefix after a summary call or another chat's request.
// Bounded in characters too, for tests that send megabytes of media.
const RECENT_PROMPTS = 8;
const RECENT_CHARS = 64 * 1024 * 1024;

export type ImplicitCache = ReturnType<typeof createImplicitCache>;

export function createImplicitCache() {
  const recent = new Map<string, string[]>();
  const keyOf = (apiKey: string | undefined, model: string) => `${apiKey ?? ""}\n${model}`;

  return {
    /** Tokens of `prompt` a recent request of this key and model already holds (0 below the minimum). */
    cachedTokens(apiKey: string | undefined, model: string, prompt: string): number {
      const minimum = implicitCacheMinimum(model);
      if (minimum === undefined) return 0;
      let longest = 0;
      for (const earlier of recent.get(keyOf(apiKey, model)) ?? []) {
        longest = Math.max(longest, commonPrefixLength(earlier, prompt));
      }
      const tokens = Math.ceil(longest / 4);
      return tokens >= minimum ? tokens : 0;
    },

    /** A request Gemini answered: its prompt can serve the next ones. */
    remember(apiKey: string | undefined, model: string, prompt: string): void {
      const key = keyOf(apiKey, model);
      const kept = [prompt];
      let chars = prompt.length;
      for (const earlier of recent.get(key) ?? []) {
        if (kept.length === RECENT_PROMPTS || chars + earlier.length > RECENT_CHARS) break;
        if (earlier === prompt) continue;
        kept.push(earlier);
        chars += earlier.length;
      }
      recent.set(key, kept);
    },
  };
}
