import type { Logger } from "../logger.js";
import { type CompactionLimits, isOverBudget, planCompaction } from "../session/compaction-plan.js";
import { textOf } from "../session/events.js";
import { appendMemory } from "../session/memory-files.js";
import {
  type ChatContext,
  contextSize,
  type SessionStore,
  type StoredSession,
} from "../session/store.js";
import { GeminiError } from "./gemini-errors.js";
import type { AgentHooks } from "./hooks.js";
import type { ModelClient } from "./model-client.js";
import { SUMMARY_INSTRUCTION, SUMMARY_REQUEST, summaryFraming } from "./prompts.js";
import { transcriptOf } from "./transcript.js";
import type { Compactor } from "./turn.js";

export const SUMMARY_UNAVAILABLE = "Summary unavailable.";
const SUMMARY_UNAVAILABLE_LATER = "(Summary unavailable for the messages after this.)";

/** What the chat and the terminal show when a conversation was compacted. */
export function compactionNotice(summarizedEvents: number): string {
  return `🧠 Compacted ${summarizedEvents} earlier message${summarizedEvents === 1 ? "" : "s"} into a summary`;
}

export type CompactionOutcome =
  | { status: "compacted"; summarizedEvents: number; context: ChatContext }
  | { status: "nothing-to-compact"; context: ChatContext }
  /** `reason` is fit for the chat: it says what failed, without the call's internals. */
  | { status: "failed"; reason: string; context: ChatContext }
  /** The user stopped the answer during the summary call: nothing was stored. */
  | { status: "stopped"; context: ChatContext };

export type CompactorDeps = {
  store: SessionStore;
  model: ModelClient;
  hooks: AgentHooks;
  logger: Logger;
  settings: CompactionLimits & { model: string; memoryDir: string; timeZone?: string };
  now?: () => Date;
  /** Runs after a summary was stored (the profile's consolidation); never throws. */
  afterSummary?(chatId: string, summary: string): Promise<void>;
};

type CompactOptions = {
  context?: ChatContext;
  guard?: () => Promise<void>;
  /** Aborts the summary call; the outcome is then "stopped". */
  stop?: AbortSignal;
};

export function createCompactor(deps: CompactorDeps): Compactor & {
  compact(chatId: string, options?: CompactOptions): Promise<CompactionOutcome>;
} {
  const { store, model, hooks, settings } = deps;
  const now = deps.now ?? (() => new Date());

  /**
   * What the summary is written from. What /forget hid stays out: the summary is recalled
   * (search, read_memory, the profile's rewrite) where the events it would repeat no longer are.
   */
  async function summaryInput(
    chatId: string,
    context: ChatContext,
    plan: readonly StoredSession[],
  ) {
    const forgotten = await store.forgottenAmong(chatId, [
      ...(context.summary ? [context.summary.id] : []),
      ...plan.map((e) => e.id),
    ]);
    const summary =
      context.summary && !forgotten.has(context.summary.id) ? context.summary : undefined;
    return { summary, events: plan.filter((e) => !forgotten.has(e.id)) };
  }

  async function summarise(
    input: Awaited<ReturnType<typeof summaryInput>>,
    stop: AbortSignal | undefined,
  ) {
    const previous = input.summary
      ? `${summaryFraming(textOf(input.summary.event.summary))}\n\n`
      : "";
    const result = await model.generate({
      model: settings.model,
      systemInstruction: SUMMARY_INSTRUCTION,
      contents: [
        {
          role: "user",
          parts: [
            {
              text: `${previous}[Conversation]\n${transcriptOf(input.events)}\n\n${SUMMARY_REQUEST}`,
            },
          ],
        },
      ],
      ...(stop ? { stop } : {}),
    });
    // Thought parts are the model's reasoning, not the summary.
    const text = (result.content.parts ?? [])
      .filter((p) => !p.thought && p.text)
      .map((p) => p.text)
      .join("")
      .trim();
    return {
      text,
      finishReason: result.finishReason ?? result.blockReason,
      usage: result.usage,
      stopped: result.stopped === true,
    };
  }

  /**
   * Compacts now (same rules as the automatic trigger, minus the trigger). A failed summary call
   * is an outcome, not an error; the database failing is thrown. `guard` runs before anything is
   * written: the summary call can be long, and the chat may have passed to another process.
   */
  async function compact(chatId: string, options: CompactOptions = {}): Promise<CompactionOutcome> {
    const log = deps.logger.child({ chat_id: chatId });
    const context = options.context ?? (await store.loadContext(chatId));
    const plan = planCompaction(context, settings);
    if (!plan) return { status: "nothing-to-compact", context };
    const started = performance.now();
    const before = contextSize(context);
    const input = await summaryInput(chatId, context, plan.summarize);
    let summarised: Awaited<ReturnType<typeof summarise>>;
    try {
      summarised = await summarise(input, options.stop);
    } catch (error) {
      log.warn({ err: error }, "compaction failed: the summary call did not succeed");
      return {
        status: "failed",
        // What the chat may read: Gemini's words without the call's internals, and nothing of
        // another failure's (the log has it).
        reason:
          error instanceof GeminiError
            ? error.userMessage.replace(/\.$/, "")
            : "something went wrong on my side",
        context,
      };
    }
    const { text, finishReason } = summarised;
    hooks.emit("modelCall", { chatId, model: settings.model, usage: summarised.usage });
    if (summarised.stopped) {
      log.info("compaction stopped with the answer: the summary call was cut off, nothing stored");
      return { status: "stopped", context };
    }
    // A blocked or empty summary is stored as such rather than retried: the same transcript would
    // most likely be refused again, and the context would then grow without bound.
    if (text === "") {
      log.warn(
        { finish_reason: finishReason },
        `the summary model returned no text; storing "${SUMMARY_UNAVAILABLE}"`,
      );
    }
    // The memory file gets what the new summary says; the context keeps what earlier ones said.
    const summary = text || SUMMARY_UNAVAILABLE;
    const previous = input.summary && textOf(input.summary.event.summary);
    const stands = text || (previous ? `${previous}\n\n${SUMMARY_UNAVAILABLE_LATER}` : summary);
    await options.guard?.();
    const first = plan.summarize[0];
    const last = plan.summarize.at(-1);
    const stored = await store.appendCompaction(chatId, {
      event: {
        v: 1,
        event_type: "compaction",
        summary: [{ kind: "text", text: stands }],
        summarized_events: plan.summarize.length,
      },
      coversFromId: context.summary?.coversFromId ?? first?.id ?? 0,
      coversToId: last?.id ?? 0,
    });
    await appendMemory({
      memoryDir: settings.memoryDir,
      chatId,
      at: now(),
      text: summary,
      timeZone: settings.timeZone,
    }).catch((error) =>
      log.error({ err: error }, "could not append the summary to the memory file"),
    );
    if (text) await deps.afterSummary?.(chatId, text);
    const compacted: ChatContext = { summary: stored, events: plan.keep };
    const after = contextSize(compacted);
    const durationMs = Math.round((performance.now() - started) * 100) / 100;
    log.info(
      {
        events_before: before.events,
        events_after: after.events,
        tokens_before: before.tokens,
        tokens_after: after.tokens,
        duration_ms: durationMs,
      },
      "compacted the conversation",
    );
    hooks.emit("compaction", {
      chatId,
      summarizedEvents: plan.summarize.length,
      eventsBefore: before.events,
      eventsAfter: after.events,
      tokensBefore: before.tokens,
      tokensAfter: after.tokens,
      durationMs,
    });
    return { status: "compacted", summarizedEvents: plan.summarize.length, context: compacted };
  }

  return {
    compact,
    async maybeCompact(chatId, context, guard, stop, force) {
      if (!force && !isOverBudget(context, settings)) {
        return { status: "nothing-to-compact", context };
      }
      return compact(chatId, { context, guard, stop });
    },
  };
}
