import { type Api, Composer, type Context } from "grammy";
import type { Update } from "grammy/types";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError } from "../agent/gemini-errors.js";
import type { AgentHooks } from "../agent/hooks.js";
import type { Agent } from "../agent/turn.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import type { InboxItem, Lease } from "../queue/inbox.js";
import { conversationKeyOf } from "./conversation-key.js";
import type { Delivery } from "./delivery.js";
import { startLiveAnswer } from "./live-answer.js";
import { modelText } from "./message-context.js";
import { escapeHtml } from "./render.js";
import type { RunningAnswers } from "./running-answers.js";
import { threadOf, threadOfMessage } from "./topics.js";

export const NON_TEXT_REPLY =
  "I can only read text messages for now: photos, voice messages, stickers and files are not supported yet. Please type your message.";

export type ConversationDeps = {
  agent: Agent;
  hooks: AgentHooks;
  delivery: Delivery;
  logger: Logger;
  /** The inbox lease of an update being run, if it came through the inbox. */
  leaseOf?(updateId: number): Lease | undefined;
  /** For drafts, without auto-retry (see startLiveAnswer). */
  liveApi: Api;
  streaming: StreamingMode;
  answers: RunningAnswers;
};

export const GAVE_UP =
  "Sorry, I could not answer your last message: something kept failing on my side. Please send it again in a minute.";

/** Tells the user the inbox gave up on their update, in the forum topic it came from. */
export async function tellGaveUp(delivery: Delivery, item: InboxItem): Promise<void> {
  const { message } = item.update as Update;
  if (!message) return;
  await delivery.sendHtml(message.chat.id, escapeHtml(GAVE_UP), threadOfMessage(message));
}

/**
 * What the chat is told when Gemini failed: Gemini's own words, and what the user can do when
 * they keep coming back. A history Gemini refuses (400) refuses every later turn of the chat too.
 */
export function geminiFailureText(error: GeminiError): string {
  if (error.status === 400) {
    return `${error.userMessage}\nIf this keeps happening, /clear starts this chat afresh (the memory files stay).`;
  }
  if (error.status === 401 || error.status === 403) {
    return `${error.userMessage}\nThe bot's Gemini API key may be wrong or lack access: please tell whoever runs the bot.`;
  }
  return error.userMessage;
}

/** Text messages become agent turns; anything else gets told what the bot can read. */
export function conversationComposer(deps: ConversationDeps): Composer<Context> {
  const { agent, hooks, delivery } = deps;
  const composer = new Composer<Context>();

  composer.on("message:text", async (ctx) => {
    const chatId = ctx.chat.id;
    const session = conversationKeyOf(ctx.msg);
    const threadId = threadOf(ctx);
    const lease = deps.leaseOf?.(ctx.update.update_id);
    const started = performance.now();
    const stopTyping = delivery.showTyping(chatId, threadId);
    const notices: Promise<void>[] = [];
    const stopNotices = hooks.on("compaction", (e) => {
      if (e.chatId !== session) return;
      const notice = delivery.sendHtml(chatId, compactionNotice(e.summarizedEvents), threadId);
      // Sent while the turn goes on, and only a courtesy: failing, it must neither fail the
      // turn nor, unawaited until the turn ends, go unhandled (which ends the process).
      notices.push(
        notice.catch((error: unknown) =>
          deps.logger.warn(
            { err: error, chat_id: session },
            "could not send the compaction notice",
          ),
        ),
      );
    });
    // The update's id names the draft: a run after a restart continues the same one.
    const draftId = ctx.update.update_id;
    const live = startLiveAnswer({
      api: deps.liveApi,
      delivery,
      logger: deps.logger,
      chatId,
      threadId,
      privateChat: ctx.chat.type === "private",
      mode: deps.streaming,
      draftId,
    });
    const running = deps.answers.start(session, chatId, draftId);
    try {
      const result = await agent.runTurn(session, {
        text: modelText(ctx.msg, ctx.me, ctx.chat.type !== "private"),
        updateId: ctx.update.update_id,
        guard: lease && (() => lease.ensureHeld()),
        progress: live.progress,
        stop: running.signal,
      });
      await Promise.all(notices);
      await lease?.ensureHeld();
      // A run that takes over a stored answer sends only what earlier runs did not.
      await live.finish(
        result.text,
        lease && {
          alreadySent: result.resumed ? lease.delivered : 0,
          sent: (count) => lease.recordDelivered(count),
        },
      );
      // Without streaming, the answer's first words show when its messages have gone out.
      hooks.emit("firstVisibleText", {
        chatId: session,
        seconds: (performance.now() - started) / 1000,
      });
    } catch (error) {
      await live.close();
      // Anything but Gemini refusing or being away (Telegram or the database failing, a bug) is
      // left to the inbox: it runs the update again later, reusing what was stored, and tells
      // the user only if it gives up.
      if (!(error instanceof GeminiError)) throw error;
      deps.logger.warn(
        { err: error, chat_id: session, update_id: ctx.update.update_id },
        "turn failed: Gemini",
      );
      await lease?.ensureHeld();
      await delivery.sendHtml(chatId, escapeHtml(geminiFailureText(error)), threadId);
    } finally {
      running.done();
      stopNotices();
      stopTyping();
    }
  });

  composer.on("message", (ctx) =>
    delivery.sendHtml(ctx.chat.id, escapeHtml(NON_TEXT_REPLY), threadOf(ctx)),
  );

  return composer;
}
