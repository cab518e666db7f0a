import { billedInputTokens, type Usage } from "../agent/model-client.js";

/** US dollars per million tokens, standard (paid, non-batch) tier, text prompts ≤ 200k tokens. */
export type ModelPrice = {
  input: number;
  /** Prompt tokens served from Gemini's implicit cache. */
  cachedInput: number;
  /** Thinking included: Gemini bills it as output. */
  output: number;
  /**
   * The first day (YYYY-MM-DD, from the host's local midnight, as /usage's periods) these rates
   * apply; absent on a model's first row. A change Google has announced is a row of its own.
   */
  from?: string;
  /** Where the numbers come from, and when they were checked. */
  source: string;
  checked: string;
};

const PRICING_PAGE = "ai.google.dev/gemini-api/docs/pricing";

/**
 * The one price table: each model's rates, oldest first. Estimates only: Google's page
 * (https://ai.google.dev/gemini-api/docs/pricing) is the authority, and it changes; add or update a
 * row with its source and date when it does.
 */
export const PRICES: Readonly<Record<string, readonly ModelPrice[]>> = {
  "gemini-3.8-flash": [
    {
      input: 0.75,
      cachedInput: 0.075,
      output: 3.75,
      source: `${PRICING_PAGE} ("$0.75 through December 31, 2026", output "$3.75 through December 31, 2026"), as transcribed on 2026-10-07 by api-evangelist/deepmind; cached input $0.075 per docs.apiyi.com's list price`,
      checked: "2026-12-03",
    },
    {
      from: "2027-01-01",
      input: 1.5,
      cachedInput: 0.15,
      output: 7.5,
      source: `${PRICING_PAGE} ("$1.50 starting January 1, 2027", output "$7.50 starting January 1, 2027"), same transcription; cached input assumed at a tenth of input, as before`,
      checked: "2026-12-03",
    },
  ],
  "gemini-3.5-flash-lite": [
    {
      input: 0.3,
      cachedInput: 0.03,
      output: 2.5,
      source: `${PRICING_PAGE} ("$0.30 (text / image / video / audio)", output "$2.50"), as transcribed on 2026-10-07 by api-evangelist/deepmind, and the "What's new in Gemini 3.6 Flash and 3.5 Flash-Lite" page; cached input assumed at a tenth of input`,
      checked: "2026-12-03",
    },
  ],
  "gemini-3.1-flash-lite": [
    {
      input: 0.25,
      cachedInput: 0.025,
      output: 1.5,
      source: `${PRICING_PAGE}, as quoted by morphllm.com's Gemini API price list; cached input assumed at a tenth of input`,
      checked: "2026-12-03",
    },
  ],
  "gemini-3.6-flash": [
    {
      input: 0.75,
      cachedInput: 0.075,
      output: 3.75,
      source:
        "Google's promotional rate until 2026-12-31, per agent-telemetry v1.6.6's release notes and docs.venice.ai's listing ($0.9375/$4.69, a 1.25× resale); cached input assumed at a tenth of input",
      checked: "2026-12-02",
    },
    {
      from: "2027-01-01",
      input: 1.5,
      cachedInput: 0.15,
      output: 7.5,
      source:
        'the list price after the promotion: "$1.50 per 1M input tokens and $7.50 per 1M output tokens" on the "What\'s new in Gemini 3.6 Flash and 3.5 Flash-Lite" page; cached input assumed at a tenth of input',
      checked: "2026-12-03",
    },
  ],
  "gemini-3.5-flash": [
    {
      input: 1.5,
      cachedInput: 0.15,
      output: 9,
      source: `${PRICING_PAGE} ("$1.50", output "$9.00"), as transcribed on 2026-10-07 by api-evangelist/deepmind; cached input $0.15 per sinha96.github.io's migration notes`,
      checked: "2026-12-03",
    },
  ],
  "gemini-3-flash-preview": [
    {
      input: 0.5,
      cachedInput: 0.05,
      output: 3,
      source: `${PRICING_PAGE}, as quoted by factquire.com (accessed 2026-07-04)`,
      checked: "2026-12-02",
    },
  ],
  "gemini-3.8-flash-tts": [
    {
      input: 0.5,
      cachedInput: 0.5,
      output: 9,
      source:
        "Google's launch rates for 3.8 Flash TTS ($0.50 text in, $9.00 audio out until 2026-12-31), as LiteLLM's, Vercel's and micdrop.dev's price lists quote them; nothing is cached",
      checked: "2026-12-03",
    },
    {
      from: "2027-01-01",
      input: 1,
      cachedInput: 1,
      output: 18,
      source:
        "the launch rates double from 2027-01-01, per the same price lists; nothing is cached",
      checked: "2026-12-03",
    },
  ],
  "gemini-nano-banana-2.1": [
    {
      input: 1.5,
      cachedInput: 1.5,
      output: 30,
      source:
        "Nano Banana 2.1: $30 per million image tokens out ($0.0336 a 1K picture), $1.50 text or image in, per LiteLLM's day-0 announcement (BerriAI/litellm discussion 44983) and inference.sh's listing; its text out ($7.50) is billed here at the image rate, a slight overestimate; nothing is cached",
      checked: "2026-12-03",
    },
  ],
  // Shut down on 2026-10-29; kept so that usage recorded before then is still priced.
  "gemini-3.1-flash-image": [
    {
      input: 0.5,
      cachedInput: 0.5,
      output: 60,
      source:
        "Gemini 3.1 Flash Image: $60 per million image tokens out (about 1,120 a 1K picture, $0.067), $0.50 text or image in, per therouter.ai, xairouter.com and getmaxim.ai quoting Google's page; its text out ($1.50–3) is billed here at the image rate, a slight overestimate; nothing is cached",
      checked: "2026-12-03",
    },
  ],
};

/** The local midnight starting `day` (YYYY-MM-DD). */
const localMidnight = (day: string): Date => {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(year ?? 0, (month ?? 1) - 1, date ?? 1);
};

/** `model`'s rates in effect at `at`, or undefined for a model the table does not know. */
export function priceOf(model: string, at: Date): ModelPrice | undefined {
  const rows = PRICES[model.replace(/^models\//, "")] ?? [];
  return rows.findLast((row) => row.from === undefined || localMidnight(row.from) <= at);
}

/** Dollars for `usage` at `price`: cached prompt tokens at the cached rate, the rest at input. */
export function costOf(usage: Usage, price: ModelPrice): number {
  const fresh = Math.max(0, billedInputTokens(usage) - usage.cachedTokens);
  return (
    (fresh * price.input +
      usage.cachedTokens * price.cachedInput +
      usage.outputTokens * price.output) /
    1_000_000
  );
}
