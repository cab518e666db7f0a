import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { billedInputTokens, type Usage } from "../agent/model-client.js";

/** How a turn ended, as counted by koroku_turns_total. */
export type TurnOutcome = "answered" | "gemini_error" | "lease_lost" | "error";

/** Of the inbox, what /metrics reports: unfinished work waiting to run. */
export type InboxBacklog = { pending: number; oldestPendingAgeSeconds: number };

// Seconds a user waits: a model call takes one to a few, a turn with tools several calls.
const WAIT_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120];

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The service's Prometheus series, on a registry of its own (no global state: tests and the
 * terminal chat each get theirs). Everything the rest of the code reports goes through the
 * functions returned here.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const turns = new Counter({
    name: "koroku_turns_total",
    help: "Turns run, by how they ended: answered, gemini_error (refused or unavailable; the user was told), lease_lost (another replica took the update over), error (left to the inbox to retry)",
    labelNames: ["outcome"],
    registers,
  });
  const turnDuration = new Histogram({
    name: "koroku_turn_duration_seconds",
    help: "From the start of a turn to its answer (or failure), model calls and tools included",
    labelNames: ["outcome"],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const firstVisibleText = new Histogram({
    name: "koroku_first_visible_text_seconds",
    help: "From the start of a turn to the first words of its answer visible in the chat",
    buckets: WAIT_BUCKETS,
    registers,
  });
  const modelCallDuration = new Histogram({
    name: "koroku_model_call_duration_seconds",
    help: "One Gemini call, its retries included, by model and outcome (ok, error)",
    labelNames: ["model", "outcome"],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const tokens = new Counter({
    name: "koroku_model_tokens_total",
    help: "Tokens Gemini reported, by model and kind: prompt (cached included), cached, output (thoughts included), thoughts",
    labelNames: ["model", "kind"],
    registers,
  });
  const toolCalls = new Counter({
    name: "koroku_tool_calls_total",
    help: "Tool calls the model made, by tool and outcome (ok, error)",
    labelNames: ["tool", "outcome"],
    registers,
  });
  const compactions = new Counter({
    name: "koroku_compactions_total",
    help: "Conversations compacted into a summary",
    registers,
  });
  const telegramErrors = new Counter({
    name: "koroku_telegram_errors_total",
    help: "Failed Telegram API calls, each attempt counted, by method and code (the HTTP error code, e.g. 429 for flood waits, or network)",
    labelNames: ["method", "code"],
    registers,
  });
  const geminiRateLimited = new Counter({
    name: "koroku_gemini_rate_limited_total",
    help: "Gemini calls answered 429 (the API key's quota spent); each one holds every call of the process back",
    registers,
  });
  let geminiClosedForMs: (() => number) | undefined;
  new Gauge({
    name: "koroku_gemini_backoff_seconds",
    help: "How long calls to Gemini are still held back after a 429 (0 when they go at once)",
    registers,
    collect() {
      this.set((geminiClosedForMs?.() ?? 0) / 1000);
    },
  });
  const embedded = new Counter({
    name: "koroku_embedded_events_total",
    help: "Events embedded for recall by meaning (the backfill of older history included)",
    registers,
  });
  let readEmbeddingBacklog: (() => Promise<number>) | undefined;
  new Gauge({
    name: "koroku_embedding_backlog",
    help: "Events still to embed for recall by meaning (0 once the backfill is done)",
    registers,
    async collect() {
      // A backlog that cannot be read is NaN: 0 would say the backfill is done.
      this.set((await readEmbeddingBacklog?.().catch(() => Number.NaN)) ?? 0);
    },
  });
  const databaseErrors = new Counter({
    name: "koroku_database_errors_total",
    help: "Database queries that failed",
    registers,
  });

  let readBacklog: (() => Promise<InboxBacklog>) | undefined;
  let backlog: Promise<InboxBacklog | undefined> | undefined;
  /** One read of the inbox per scrape, shared by its two gauges. */
  const currentBacklog = () => {
    backlog ??= (readBacklog?.() ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .finally(() => {
        backlog = undefined;
      });
    return backlog;
  };
  new Gauge({
    name: "koroku_inbox_pending",
    help: "Updates stored and not yet finished (waiting or running), over every replica",
    registers,
    async collect() {
      // Unread (the database away), the gauges are NaN rather than the last value read.
      const value = await currentBacklog();
      this.set(value ? value.pending : Number.NaN);
    },
  });
  new Gauge({
    name: "koroku_inbox_oldest_pending_age_seconds",
    help: "Age of the oldest unfinished update (0 when there is none)",
    registers,
    async collect() {
      const value = await currentBacklog();
      this.set(value ? value.oldestPendingAgeSeconds : Number.NaN);
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    turnEnded(outcome: TurnOutcome, seconds: number) {
      turns.inc({ outcome });
      turnDuration.observe({ outcome }, seconds);
    },
    /** For whatever first shows the answer (a draft, an edit, the final message). */
    firstVisibleText(seconds: number) {
      firstVisibleText.observe(seconds);
    },
    modelCall(model: string, ok: boolean, seconds: number, usage?: Usage) {
      modelCallDuration.observe({ model, outcome: ok ? "ok" : "error" }, seconds);
      if (!usage) return;
      tokens.inc({ model, kind: "prompt" }, billedInputTokens(usage));
      tokens.inc({ model, kind: "cached" }, usage.cachedTokens);
      tokens.inc({ model, kind: "output" }, usage.outputTokens);
      tokens.inc({ model, kind: "thoughts" }, usage.thoughtsTokens);
    },
    toolCall(tool: string, ok: boolean) {
      toolCalls.inc({ tool, outcome: ok ? "ok" : "error" });
    },
    compaction() {
      compactions.inc();
    },
    telegramError(method: string, code: string) {
      telegramErrors.inc({ method, code });
    },
    /** A Gemini call was answered 429. */
    geminiRateLimited() {
      geminiRateLimited.inc();
    },
    /** Where to read how long Gemini calls are held back; read at each scrape. */
    embedded(events: number) {
      embedded.inc(events);
    },
    /** The embedding queue tells what is left; read at each scrape. */
    watchEmbeddingBacklog(read: () => Promise<number>) {
      readEmbeddingBacklog = read;
    },
    watchGeminiLimit(closedForMs: () => number) {
      geminiClosedForMs = closedForMs;
    },
    databaseError() {
      databaseErrors.inc();
    },
    /** The service tells where its inbox is; read at each scrape. */
    watchInbox(read: () => Promise<InboxBacklog>) {
      readBacklog = read;
    },
  };
}
