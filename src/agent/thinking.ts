import type { ThinkingConfig } from "@google/genai";
import type { ThinkingLevel } from "../config.js";

// Gemini 2.5 takes a token budget instead of a level (a level there is a 400); these are the
// budgets nearest to what the levels do on Gemini 3. 2.5 Pro cannot stop thinking: 128 is its floor.
const BUDGETS: Record<ThinkingLevel, number> = { minimal: 0, low: 1024, medium: 8192, high: 24576 };
const PRO_MIN_BUDGET = 128;

// The Gemini 3 models that offer MINIMAL: 3 Flash (preview), 3.5 and 3.6 Flash, 3.1 and 3.5
// Flash-Lite. The Pro models, 3.7 and 3.8 Flash and Gemini 4 refuse it with a 400, and so may any
// newer model, so for every other id MINIMAL becomes LOW, the lowest level all of them accept.
const OFFERS_MINIMAL = /^gemini-3(\.[156])?-flash(-lite)?(-preview)?$/;

/**
 * The thinking config GEMINI_THINKING_LEVEL asks for, in the form the model understands: a level
 * for Gemini 3 and later (and ids this code does not know, which are newer), a budget for 2.5,
 * nothing for models that do not think (1.x, 2.0) or when no level is set.
 */
export function thinkingConfigFor(
  model: string,
  level: ThinkingLevel | undefined,
): ThinkingConfig | undefined {
  if (level === undefined) return undefined;
  const id = model.replace(/^models\//, "");
  const pro = /-pro\b/.test(id);
  if (/^gemini-(1\.|2\.0)/.test(id)) return undefined;
  if (/^gemini-2\.5/.test(id)) {
    const budget = BUDGETS[level];
    return { thinkingBudget: pro ? Math.max(PRO_MIN_BUDGET, budget) : budget };
  }
  const effective = level === "minimal" && !OFFERS_MINIMAL.test(id) ? "low" : level;
  return { thinkingLevel: effective.toUpperCase() as ThinkingConfig["thinkingLevel"] };
}
