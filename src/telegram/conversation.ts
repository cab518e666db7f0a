import { type Api, Composer } from "grammy";
import type { Message, Update } from "grammy/types";
import { compactionNotice } from "../agent/compaction.js";
import type { AgentHooks } from "../agent/hooks.js";
import type { Agent } from "../agent/turn.js";
import { turnAnswerer } from "../answer/answer-turn.js";
import type { Delivery } from "../answer/delivery.js";
import type { LiveAnswer } from "../answer/live-answer.js";
import type { LivePacer } from "../answer/live-pacer.js";
import type { ConversationVoice } from "../answer/voice-delivery.js";
import type { Approval } from "../approvals/store.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import type { InboxItem } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import type { MediaPart } from "../session/events.js";
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

  const answerTurn = turnAnswerer({
    agent,
    delivery,
    readAttachments: media.read,
    live: { api: deps.liveApi, mode: deps.streaming, pacer: deps.livePacer },
    answers: deps.answers,
    logger: deps.logger,
    sendRequests: deps.sendRequests,
    voice: deps.voice,
  });

  async function runAndAnswer(ctx: TurnContext, words: string, parts: readonly MediaPart[] = []) {
    const message = ctx.msg as Message;
    const chatId = message.chat.id;
    const { conversation: session, thread: threadId } = ctx;
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
    const progress = (live: LiveAnswer) => ({
      ...live.progress,
      text(text: string) {
        // Only an answer shown as it is written is visible now; one that is not (a group's
        // draft mode) shows when its message goes out, below.
        if (!visible && live.showing && text.trim() !== "") {
          nowVisible();
          // The draft or message growing says more than "typing…", and costs no calls.
          stopTyping();
        }
        live.progress.text(text);
      },
    });
    try {
      const result = await answerTurn({
        lease: ctx.lease,
        updateId: ctx.update.update_id,
        conversation: session,
        chatId,
        threadId,
        privateChat: message.chat.type === "private",
        // The update's id names the draft: a run after a restart continues the same one.
        draftId: ctx.update.update_id,
        askedBy: senderOf(message)?.id,
        input: {
          text: modelText(message, ctx.me, message.chat.type !== "private", words),
          media: parts,
          chatType: message.chat.type,
        },
        userSpoke: parts.some((part) => part.media === "voice"),
        failure: { log: "turn failed: Gemini" },
        ...(deps.streaming === "off" ? {} : { progress }),
        settle: () => Promise.all(notices),
        speaking() {
          // The answer's words are out: nothing is being typed any more.
          nowVisible();
          stopTyping();
        },
      });
      if (!result) return;
      // Unstreamed, the answer's first words show when its messages have gone out.
      nowVisible();
      media
        .transcribe?.(
          session,
          parts.some((part) => part.media === "voice" || part.media === "audio"),
        )
        .catch((error: unknown) =>
          deps.logger.warn({ err: error, chat_id: session }, "transcribing voice notes failed"),
        );
    } finally {
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

  composer.on("message:text", (ctx) => ctx.answerAfter(() => runAndAnswer(ctx, ctx.msg.text)));

  composer.on("message", (ctx) =>
    ctx.answerAfter(async () => {
      const album = ctx.msg.media_group_id;
      if (album === undefined) return answerMessage(ctx);
      return answerAlbum(ctx, await ctx.lease.takeAlbum(album));
    }),
  );

  return composer;
}
