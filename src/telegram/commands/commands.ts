import { Composer } from "grammy";
import { type CompactionOutcome, compactionNotice } from "../../agent/compaction.js";
import type { Delivery } from "../../answer/delivery.js";
import type { Logger } from "../../logger.js";
import { startFresh } from "../../recall/fresh-start.js";
import { escapeHtml } from "../../render/markdown-html.js";
import { conversationKey } from "../../scope/conversation-key.js";
import type { CompactionLimits } from "../../session/compaction-plan.js";
import { truncate } from "../../session/event-text.js";
import {
  FRESH_START_LINE,
  HISTORY_TURNS_RULE,
  type HistoryLine,
  historyLines,
  historyTurns,
} from "../../session/history-view.js";
import type { PendingTopicNames } from "../../session/pending-topic-names.js";
import type { ChatStats, SessionStore } from "../../session/store.js";
import type { TaskStore } from "../../tasks/store.js";
import { NOTHING_TO_STOP } from "../ingest.js";
import type { TurnContext } from "../turn-context.js";
import { COMMANDS } from "./command-list.js";
import { NEW_TOPIC_NAME, openTopic } from "./new-topics.js";

const MAX_LINE_CHARS = 1_500;

export function helpHtml(): string {
  return [
    "<b>Koroku</b> is your personal assistant on Gemini. It remembers every conversation, can read and write files in its workspace, and searches everything you said before.",
    "",
    "Just write to it. Commands:",
    ...COMMANDS.filter((c) => c.command !== "start").map(
      (c) => `/${c.command} — ${escapeHtml(c.description)}`,
    ),
  ].join("\n");
}

const clip = (text: string) => truncate(text, MAX_LINE_CHARS);

function historyLineHtml(line: HistoryLine): string {
  switch (line.kind) {
    case "user":
      return `<b>You:</b> ${escapeHtml(clip(line.text))}`;
    case "task":
      return `⏰ <b>Scheduled task:</b> ${escapeHtml(clip(line.text))}`;
    case "assistant":
      return `<b>Koroku:</b> ${escapeHtml(clip(line.text))}${line.mark ? ` <i>${line.mark}</i>` : ""}`;
    case "summary":
      return `🧠 <i>Summary of earlier conversation:</i> ${escapeHtml(clip(line.text))}`;
    case "fresh":
      return `🆕 <i>${FRESH_START_LINE}</i>`;
    case "tool":
      return `${line.ok ? "✓" : "✗"} <code>${escapeHtml(line.name)}</code> <code>${escapeHtml(line.args)}</code>`;
  }
}

function percentLeft(stats: ChatStats, limits: CompactionLimits): string {
  const left: number[] = [];
  if (limits.maxEvents > 0) left.push(1 - stats.events / limits.maxEvents);
  if (limits.maxTokens > 0) left.push(1 - stats.tokens / limits.maxTokens);
  if (left.length === 0) return "compaction is off";
  const pct = Math.max(0, Math.min(100, Math.round(Math.min(...left) * 100)));
  return `${pct}% (events ${stats.events}/${limits.maxEvents || "∞"}, tokens ${stats.tokens.toLocaleString("en-US")}/${limits.maxTokens ? limits.maxTokens.toLocaleString("en-US") : "∞"})`;
}

function outcomeHtml(outcome: CompactionOutcome): string {
  switch (outcome.status) {
    case "compacted":
      return compactionNotice(outcome.summarizedEvents);
    case "nothing-to-compact":
      return "Nothing to compact yet: the conversation holds only the latest exchange.";
    case "failed":
      // The reason says what to do (Gemini's "try again in a minute" when it was unavailable).
      return `Compaction failed: ${escapeHtml(outcome.reason)}. The conversation is unchanged.`;
    case "stopped":
      return "Compaction stopped. The conversation is unchanged.";
  }
}

export type CommandDeps = {
  store: SessionStore;
  /** `guard` runs before the summary is written (see the compactor). */
  compact(chatId: string, guard?: () => Promise<void>): Promise<CompactionOutcome>;
  delivery: Delivery;
  settings: CompactionLimits & { model: string };
  pendingTopicNames: PendingTopicNames;
  /** A cleared conversation's scheduled tasks end with it. */
  tasks: Pick<TaskStore, "disableConversation">;
  /** So do its tool calls waiting for an answer (none without approvals), and /new's. */
  cancelApprovals?(conversation: string): Promise<void>;
  logger: Logger;
};

const clearedHtml = (removed: number, tasks: number) =>
  `🧹 Cleared this conversation (${removed} stored event${removed === 1 ? "" : "s"}). The memory files with earlier summaries are kept.${tasks > 0 ? ` Its ${tasks} scheduled task${tasks === 1 ? " was" : "s were"} cancelled.` : ""}`;

const freshHtml = (left: number) =>
  left === 0
    ? "🆕 This conversation is fresh already."
    : `🆕 A fresh conversation starts here: the ${left} earlier event${left === 1 ? " is" : "s are"} out of my context, yet I can still recall them when you ask. /clear wipes them instead.`;

/** The slash commands: answered from the database, without a model call (except /compact). */
export function commandsComposer(deps: CommandDeps): Composer<TurnContext> {
  const { store, delivery, settings } = deps;
  const composer = new Composer<TurnContext>();
  const reply = (ctx: TurnContext, html: string) =>
    delivery.sendHtml(ctx.chat?.id as number, html, ctx.thread);

  /**
   * Wipes a conversation, disables its scheduled tasks (they would run in an empty one) and ends
   * its tool calls waiting for an answer.
   */
  async function clear(ctx: TurnContext): Promise<string> {
    const { conversation } = ctx;
    // Their buttons would answer calls whose turn is gone.
    await deps.cancelApprovals?.(conversation);
    const removed = await store.clear(conversation);
    const disabled = await deps.tasks.disableConversation(conversation, "conversation cleared");
    if (disabled > 0) {
      deps.logger.info(
        { conversation, tasks: disabled },
        "disabled the scheduled tasks of a cleared conversation",
      );
    }
    return clearedHtml(removed, disabled);
  }

  composer.command(["start", "help"], (ctx) => reply(ctx, helpHtml()));

  // The ingest handles /stop as it arrives; one that reaches the bot had nothing left to stop.
  composer.command("stop", (ctx) => reply(ctx, escapeHtml(NOTHING_TO_STOP)));

  // A command that writes checks first that no other process has taken its update over.
  composer.command("clear", async (ctx) => {
    await ctx.lease.ensureHeld();
    await reply(ctx, await clear(ctx));
  });

  // A new topic where the chat has topics and the bot may open one; elsewhere a fresh context in
  // this conversation. Either way the history stays for recall.
  composer.command("new", async (ctx) => {
    await ctx.lease.ensureHeld();
    const threadId = await openTopic(ctx, deps.logger);
    if (threadId === undefined) {
      // Their turn leaves the context: an answer to their buttons would have nothing to go on.
      await deps.cancelApprovals?.(ctx.conversation);
      const left = await startFresh(store, ctx.conversation);
      await reply(ctx, freshHtml(left));
      return;
    }
    await deps.pendingTopicNames.remember(conversationKey({ chatId: ctx.chat.id, threadId }));
    // In a group the bot hears only what is addressed to it, so the first message must be.
    const first =
      ctx.chat.type === "private"
        ? "Your first message"
        : `Your first message to me (mention @${escapeHtml(ctx.me.username)})`;
    await delivery.sendHtml(
      ctx.chat.id,
      `🆕 A fresh conversation starts here. ${first} gives this topic its name.`,
      threadId,
    );
    await reply(
      ctx,
      `🆕 Opened the topic “${escapeHtml(NEW_TOPIC_NAME)}” for a fresh conversation.`,
    );
  });

  composer.command("history", async (ctx) => {
    const turns = historyTurns(ctx.match);
    if (turns === undefined) {
      await reply(ctx, `Usage: /history [n], where ${HISTORY_TURNS_RULE}.`);
      return;
    }
    const lines = historyLines(await store.lastTurns(ctx.conversation, turns));
    await reply(
      ctx,
      lines.length === 0 ? "No conversation yet." : lines.map(historyLineHtml).join("\n"),
    );
  });

  composer.command("status", async (ctx) => {
    const stats = await store.stats(ctx.conversation);
    await reply(
      ctx,
      [
        `<b>Model:</b> ${escapeHtml(settings.model)}`,
        `<b>Context:</b> ${stats.events} events, ~${stats.tokens.toLocaleString("en-US")} tokens`,
        `<b>Compaction budget left:</b> ${percentLeft(stats, settings)}`,
        `<b>Compactions so far:</b> ${stats.compactions}`,
      ].join("\n"),
    );
  });

  composer.command("compact", async (ctx) => {
    const guard = () => ctx.lease.ensureHeld();
    await reply(ctx, outcomeHtml(await deps.compact(ctx.conversation, guard)));
  });

  return composer;
}
