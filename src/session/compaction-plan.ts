import { isRealUserMessage } from "./events.js";
import { type ChatContext, contextSize, contextTokens, type StoredSession } from "./store.js";

export type CompactionLimits = {
  /** Compact when the context holds more events than this (0 = off). */
  maxEvents: number;
  /** Compact when the context's prompt tokens exceed this (0 = off). */
  maxTokens: number;
};

export type CompactionPlan = {
  /** Events folded into the new summary (with the previous summary, if any). */
  summarize: readonly StoredSession[];
  /** Whole recent turns kept verbatim; always includes the current turn. */
  keep: readonly StoredSession[];
};

export function isOverBudget(context: ChatContext, limits: CompactionLimits): boolean {
  const size = contextSize(context);
  return (
    (limits.maxEvents > 0 && size.events > limits.maxEvents) ||
    (limits.maxTokens > 0 && size.tokens > limits.maxTokens)
  );
}

/** Indexes where turns start: each real user message (and index 0, whatever it holds). */
function turnStarts(events: readonly StoredSession[]): number[] {
  const starts = [0];
  events.forEach((e, i) => {
    if (i > 0 && isRealUserMessage(e.event)) starts.push(i);
  });
  return starts;
}

/**
 * Decides what a compaction keeps and what it summarises. Cuts fall only between whole turns, so
 * a function call never loses its responses. The longest run of recent turns that fits in half of
 * both budgets is kept, and always the current turn; if that would keep everything, only the
 * current turn is kept, so a compaction always makes room. Returns undefined when nothing lies
 * before the current turn.
 */
export function planCompaction(
  context: ChatContext,
  limits: CompactionLimits,
): CompactionPlan | undefined {
  const { events } = context;
  const starts = turnStarts(events);
  const current = starts.at(-1) as number;
  if (current === 0) return undefined;
  const eventRoom =
    limits.maxEvents > 0 ? Math.floor(limits.maxEvents / 2) : Number.POSITIVE_INFINITY;
  // Turns are sized by the store's estimate (characters / 4), scaled to what Gemini measured for
  // this context: code or CJK text holds more tokens per character, and unscaled, the whole
  // context would seem to fit in half the budget, which keeps only the current turn.
  const estimated = events.reduce(
    (sum, e) => sum + e.estimatedTokens,
    context.summary?.estimatedTokens ?? 0,
  );
  const scale = estimated > 0 ? contextTokens(context) / estimated : 1;
  const tokenRoom =
    limits.maxTokens > 0 ? Math.floor(limits.maxTokens / 2 / scale) : Number.POSITIVE_INFINITY;

  let cut = current;
  let tokens = 0;
  for (let i = events.length - 1; i >= current; i--)
    tokens += (events[i] as StoredSession).estimatedTokens;
  for (let t = starts.length - 2; t >= 0; t--) {
    const start = starts[t] as number;
    let turnTokens = 0;
    for (let i = start; i < cut; i++) turnTokens += (events[i] as StoredSession).estimatedTokens;
    if (events.length - start > eventRoom || tokens + turnTokens > tokenRoom) break;
    tokens += turnTokens;
    cut = start;
  }
  if (cut === 0) cut = current;
  return { summarize: events.slice(0, cut), keep: events.slice(cut) };
}
