import type { Usage } from "../agent/model-client.js";

/** US dollars per million tokens, standard (paid, non-batch) tier, text prompts ≤ 200k tokens. */
export type ModelPrice = {
  input: number;
  /** Prompt tokens served from Gemini's implicit cache. */
  cachedInput: number;
  /** Thinking included: Gemini bills it as output. */
  output: number;
  /** Where the numbers come from, and when they were checked. */
  source: string;
  checked: string;
};

/**
 * The one price table. Estimates only: Google's page (https://ai.google.dev/gemini-api/docs/pricing)
 * is the authority, and it changes; update a row with its source and date when it does.
 */
export const PRICES: Readonly<Record<string, ModelPrice>> = {
  "gemini-3.6-flash": {
    input: 0.75,
    cachedInput: 0.075,
    output: 3.75,
    source:
      "Google's promotional rate until 2026-12-31 (it doubles from 2027-01-01), per agent-telemetry v1.6.6's release notes and docs.venice.ai's listing ($0.9375/$4.69, a 1.25× resale); cached input assumed at a tenth of input, as Google prices it for gemini-3-flash-preview",
    checked: "2026-12-02",
  },
  "gemini-3.5-flash": {
    input: 1.5,
    cachedInput: 0.15,
    output: 9,
    source:
      "Google's launch pricing (May 2026) as summarised by apidog.com and dev.to; cached input assumed at a tenth of input",
    checked: "2026-12-02",
  },
  "gemini-3-flash-preview": {
    input: 0.5,
    cachedInput: 0.05,
    output: 3,
    source:
      "ai.google.dev/gemini-api/docs/pricing, as quoted by factquire.com (accessed 2026-07-04)",
    checked: "2026-12-02",
  },
  "gemini-3.8-flash-tts": {
    input: 1,
    cachedInput: 0.1,
    output: 20,
    source:
      "Gemini 3.1 Flash TTS's rates ($1 text in, $20 audio out, 25 audio tokens a second), as Google's pricing page lists them per nemovideo.com and runware.ai; no rate for 3.8 Flash TTS was found, so this is an upper estimate (micdrop.dev says 3.8 TTS starts at $0.50 and $6); cached input assumed at a tenth, as for the text models (a speech request is never repeated, so none is cached)",
    checked: "2026-12-03",
  },
  "gemini-3.1-flash-image": {
    input: 0.5,
    cachedInput: 0.05,
    output: 60,
    source:
      "Gemini 3.1 Flash Image: $60 per million image tokens out (about 1,120 a 1K picture, $0.067), $0.50 text or image in, per therouter.ai, xairouter.com and getmaxim.ai quoting Google's page; its text out ($1.50–3) is billed here at the image rate, a slight overestimate; cached input assumed at a tenth (a drawing request is never repeated, so none is cached)",
    checked: "2026-12-03",
  },
};

export function priceOf(model: string): ModelPrice | undefined {
  return PRICES[model.replace(/^models\//, "")];
}

/** Dollars for `usage` at `price`: cached prompt tokens at the cached rate, the rest at input. */
export function costOf(usage: Usage, price: ModelPrice): number {
  const fresh = Math.max(0, usage.promptTokens - usage.cachedTokens);
  return (
    (fresh * price.input +
      usage.cachedTokens * price.cachedInput +
      usage.outputTokens * price.output) /
    1_000_000
  );
}
