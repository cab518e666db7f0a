import { type Api, Composer } from "grammy";
import type { Message, Update } from "grammy/types";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError } from "../agent/gemini-errors.js";
import type { AgentHooks } from "../agent/hooks.js";
import type { Agent } from "../agent/turn.js";
import { deliverTurnResult, liveMessagesOf } from "../answer/answer-delivery.js";
import type { Delivery } from "../answer/delivery.js";
import { geminiFailureText } from "../answer/gemini-failure.js";
import { type LivePacer, startLiveAnswer } from "../answer/live-answer.js";
import { toolFileSender } from "../answer/tool-file-sender.js";
import { type ConversationVoice, speakAfter } from "../answer/voice-delivery.js";
import type { Approval } from "../approvals/store.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import type { InboxItem } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import type { MediaPart } from "../session/events.js";
import { speaksTo } from "../voice/voice-settings.js";
import { addressesBot, senderOf } from "./access.js";
import { modelText } from "./inbound/message-context.js";
import { type ConversationMedia, joinLines, messageInput } from "./inbound/message-input.js";
import { threadOfMessage } from "./topics.js";
import type { TurnContext } from "./turn-context.js";

export type ConversationDeps = {
  agent: Agent;
  hooks: AgentHooks;
  delivery: Delivery;
  logger: Logger;
  /** For drafts, without auto-retry (see startLiveAnswer). */
  liveApi: Api;
  livePacer?: LivePacer;
  streaming: StreamingMode;
  answers: RunningAnswers;
  media: ConversationMedia;
  /** Spoken replies (VOICE_REPLIES, /voice); none: text only. */
  voice?: ConversationVoice;
  /** Shows tool calls that wait for the user's yes, with their buttons. */
  sendRequests?(pending: readonly Approval[]): Promise<void>;
};

export const GAVE_UP =
  "Sorry, I could not answer your last message: something kept failing on my side. Please send it again in a minute.";

/** Tells the user the inbox gave up on their update, in the forum topic it came from. */
export async function tellGaveUp(delivery: Delivery, item: InboxItem): Promise<void> {
  const { message } = item.update as Update;
  if (!message) return;
  await delivery.sendHtml(message.chat.id, escapeHtml(GAVE_UP), threadOfMessage(message));
}

/** Text messages, media and the rest become agent turns; what cannot be read is said so. */
export function conversationComposer(deps: ConversationDeps): Composer<TurnContext> {
  const { agent, hooks, delivery, media } = deps;
  const input = messageInput({ media, logger: deps.logger });
  const composer = new Composer<TurnContext>();
  const reply = (ctx: TurnContext, text: string) =>
    delivery.sendHtml(ctx.chat?.id as number, escapeHtml(text), ctx.thread);

  async function runAndAnswer(ctx: TurnContext, words: string, parts: readonly MediaPart[] = []) {
    const message = ctx.msg as Message;
    const chatId = message.chat.id;
    const { conversation: session, thread: threadId, lease } = ctx;
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
      privateChat: message.chat.type === "private",
      mode: deps.streaming,
      pacer: deps.livePacer,
      draftId,
      ...liveMessagesOf(lease),
    });
    const askedBy = senderOf(message)?.id;
    const running = deps.answers.start(session, chatId, draftId, ctx.update.update_id, askedBy);
    let visible = false;
    const nowVisible = () => {
      if (visible) return;
      visible = true;
      hooks.emit("firstVisibleText", {
        chatId: session,
        seconds: (performance.now() - started) / 1000,
      });
    };
    // Streamed text shows at once (the first draft or edit is not throttled).
    const progress =
      deps.streaming === "off"
        ? live.progress
        : {
            ...live.progress,
            text(text: string) {
              if (!visible && text.trim() !== "") {
                nowVisible();
                // The draft or message growing says more than "typing…", and costs no calls.
                if (live.showing) stopTyping();
              }
              live.progress.text(text);
            },
          };
    try {
      // Decided before the turn: after the answer, nothing but the voice reply itself may wait on
      // the database (a text answer's update is then finished by the inbox alone).
      const voice = deps.voice;
      const userSpoke = parts.some((part) => part.media === "voice");
      const spoken = voice && speaksTo(await voice.settings.modeOf(session), userSpoke);
      const result = await agent.runTurn(session, {
        text: modelText(message, ctx.me, message.chat.type !== "private", words),
        media: parts,
        updateId: ctx.update.update_id,
        chatType: message.chat.type,
        guard: () => lease.ensureHeld(),
        progress,
        stop: running.signal,
        askedBy,
        ...toolFileSender({ delivery, logger: deps.logger, chatId, threadId, lease }),
      });
      await Promise.all(notices);
      await lease.ensureHeld();
      const after =
        voice && spoken && !result.stopped
          ? speakAfter({
              replies: voice.replies,
              delivery,
              conversation: session,
              chatId,
              threadId,
              text: result.text,
              resumed: result.resumed,
              stop: running.signal,
              lease,
              logger: deps.logger,
            })
          : undefined;
      // A run that takes over a stored answer sends only what earlier runs did not.
      await deliverTurnResult({
        live,
        delivery,
        read: media.read,
        chatId,
        threadId,
        result,
        lease,
        sendRequests: deps.sendRequests,
        after: after && {
          ...after,
          run(view) {
            // The answer's words are out: nothing is being typed any more.
            nowVisible();
            stopTyping();
            return after.run(view);
          },
        },
      });
      // Unstreamed, the answer's first words show when its messages have gone out.
      nowVisible();
      media
        .transcribe?.(session)
        .catch((error: unknown) =>
          deps.logger.warn({ err: error, chat_id: session }, "transcribing voice notes failed"),
        );
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
      await lease.ensureHeld();
      await delivery.sendHtml(chatId, escapeHtml(geminiFailureText(error)), threadId);
    } finally {
      running.done();
      stopNotices();
      stopTyping();
    }
  }

  /** An album, as one turn; an item that cannot be read is told, and the rest go ahead. */
  async function answerAlbum(ctx: TurnContext, updates: readonly unknown[]) {
    const items = updates
      .flatMap((u) => ((u as Update).message ? [(u as Update).message as Message] : []))
      .sort((a, b) => a.message_id - b.message_id);
    const leader = ctx.msg as Message;
    // In a group, one item's caption addresses the bot, or the album is not for it.
    if (leader.chat.type !== "private" && !items.some((m) => addressesBot(m, ctx.me))) return;
    if (items.length <= 1) return answerMessage(ctx);
    const { parts, words, problems } = await input.readAlbum(ctx.conversation, items);
    if (problems.length > 0) await reply(ctx, problems.join("\n\n"));
    if (parts.length === 0) return;
    return runAndAnswer(ctx, joinLines(...words), parts);
  }

  async function answerMessage(ctx: TurnContext) {
    const message = ctx.msg as Message;
    const read = await input.readMessage(ctx.conversation, message);
    if ("problem" in read) return reply(ctx, read.problem);
    return runAndAnswer(ctx, joinLines(...read.words, message.caption ?? ""), read.parts);
  }

  composer.on("message:text", (ctx) => runAndAnswer(ctx, ctx.msg.text));

  composer.on("message", async (ctx) => {
    const album = ctx.msg.media_group_id;
    if (album === undefined) return answerMessage(ctx);
    return answerAlbum(ctx, await ctx.lease.takeAlbum(album));
  });

  return composer;
}
