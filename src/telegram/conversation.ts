import { type Api, Composer } from "grammy";
import type { Message, Update } from "grammy/types";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError, GeminiRefusedError } from "../agent/gemini-errors.js";
import type { AgentHooks } from "../agent/hooks.js";
import type { ReadAttachments } from "../agent/request-media.js";
import type { Agent } from "../agent/turn.js";
import type { Approval } from "../approvals/store.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import { sniff } from "../media/sniff.js";
import { saveToWorkspace } from "../media/workspace-inbox.js";
import type { InboxItem } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import { scopeOfKey } from "../scope/recall-scope.js";
import type { Workspaces } from "../scope/workspaces.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import type { MediaPart } from "../session/events.js";
import type { VoiceReplies } from "../voice/voice-reply.js";
import { speaksTo, type VoiceSettings } from "../voice/voice-settings.js";
import { addressesBot, senderOf } from "./access.js";
import { liveMessagesOf } from "./answer-delivery.js";
import { deliverTurnResult } from "./approval-run.js";
import type { Delivery } from "./delivery.js";
import { type DownloadFile, FileTooBigError, FileUnavailableError, tooBigText } from "./files.js";
import { inboundOf, type WantedFile } from "./inbound.js";
import { type LivePacer, startLiveAnswer } from "./live-answer.js";
import { modelText } from "./message-context.js";
import { toolFileSender } from "./tool-file-sender.js";
import { threadOfMessage } from "./topics.js";
import type { TurnContext } from "./turn-context.js";
import { speakAfter } from "./voice-delivery.js";

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

export type ConversationVoice = { replies: VoiceReplies; settings: VoiceSettings };

export const GAVE_UP =
  "Sorry, I could not answer your last message: something kept failing on my side. Please send it again in a minute.";

/** Tells the user the inbox gave up on their update, in the forum topic it came from. */
export async function tellGaveUp(delivery: Delivery, item: InboxItem): Promise<void> {
  const { message } = item.update as Update;
  if (!message) return;
  await delivery.sendHtml(message.chat.id, escapeHtml(GAVE_UP), threadOfMessage(message));
}

/**
 * What the chat is told when Gemini failed: Gemini's own words, and what the user can do. A
 * message whose content Gemini refused is set aside (the turn keeps stand-ins for it); any other
 * 400 may come back with every later turn.
 */
export function geminiFailureText(error: GeminiError): string {
  if (error instanceof GeminiRefusedError && error.inputRefused) {
    return `${error.userMessage}\nI have set that message aside, so your next messages are answered without it. A file Gemini cannot read may go through in another form (a screenshot, a PDF export).`;
  }
  if (error.status === 400) {
    return `${error.userMessage}\nIf this keeps happening, /clear starts this chat afresh (the memory files stay).`;
  }
  if (error.status === 401 || error.status === 403) {
    return `${error.userMessage}\nThe bot's Gemini API key may be wrong or lack access: please tell whoever runs the bot.`;
  }
  return error.userMessage;
}

export type ConversationMedia = {
  download: DownloadFile;
  /** Stores a file's bytes for the conversation (content-addressed; storing twice is harmless). */
  save(conversation: string, file: NewAttachment): Promise<StoredAttachment>;
  /** The bytes of stored files (the files an answer sends). */
  read: ReadAttachments;
  /** Largest file taken (MEDIA_MAX_BYTES). */
  maxBytes: number;
  /** Documents are saved into their conversation's scope folder (its inbox/). */
  workspaces: Workspaces;
  /**
   * Writes down what the conversation's voice notes say, after the answer went out (so it never
   * holds a turn up); what failed is tried again after a later turn.
   */
  transcribe?(conversation: string): Promise<unknown>;
};

const NOT_IN_WORKSPACE =
  "[Not saved in the workspace: it could not be written to, so the file tools cannot open this file]";

const CANNOT_READ =
  "I cannot read this kind of message. Text, photos, voice notes, audio, video, stickers, documents, locations, contacts and polls I can.";

const PROBLEMS: Record<"empty" | "damaged" | "not text", (label: string) => string> = {
  empty: (label) => `Your ${label} is empty (0 bytes), so there is nothing for me to read.`,
  damaged: (label) =>
    `Your ${label} looks damaged or is not what its type says, so I could not read it. Please send it again, or export it afresh.`,
  "not text": (label) =>
    `Your ${label} is not plain text (UTF-8), so I could not read it. Send it as a PDF, or as text.`,
};

/** Text messages, media and the rest become agent turns; what cannot be read is said so. */
export function conversationComposer(deps: ConversationDeps): Composer<TurnContext> {
  const { agent, hooks, delivery, media } = deps;
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

  /**
   * Fetches, checks and stores a message's file, and saves a document into the workspace too.
   * Returns the media part and a note for the model, or what the user is told instead. A
   * transient failure (the network, Telegram's 5xx, the database) is thrown for the inbox to retry.
   */
  async function fetchFile(
    conversation: string,
    file: WantedFile,
  ): Promise<{ part: MediaPart; note?: string } | { reply: string; unavailable?: true }> {
    let bytes: Buffer;
    try {
      bytes = await media.download(file.fileId, file.size);
    } catch (error) {
      if (error instanceof FileTooBigError) return { reply: tooBigText(error, file.label) };
      if (error instanceof FileUnavailableError) {
        deps.logger.warn({ err: error, chat_id: conversation }, "Telegram could not give a file");
        return {
          reply: `I could not fetch your ${file.label} from Telegram (${error.reason}). Please send it again.`,
          unavailable: true,
        };
      }
      throw error;
    }
    const sniffed = sniff(bytes, file.mimeType);
    if (!sniffed.ok) return { reply: PROBLEMS[sniffed.problem](file.label) };
    const stored = await media.save(conversation, {
      bytes,
      mimeType: sniffed.mimeType,
      fileName: file.name,
    });
    const part: MediaPart = {
      kind: "media",
      media: file.media,
      ...stored,
      // Absent rather than undefined: stored events keep no empty keys.
      ...(file.name === undefined ? {} : { name: file.name }),
      ...(file.duration === undefined ? {} : { duration: file.duration }),
    };
    if (file.media !== "document") return { part };
    const name = file.name ?? `document-${stored.sha256.slice(0, 12)}`;
    const dir = await media.workspaces.dirOf(scopeOfKey(conversation));
    try {
      const saved = await saveToWorkspace(dir, name, bytes);
      return { part, note: `[Saved in the workspace as ${saved}]` };
    } catch (error) {
      // The file is stored, and Gemini gets it: a workspace that cannot be written (read-only,
      // full) costs the file tools their copy, not the user their answer.
      deps.logger.warn(
        { err: error, chat_id: conversation, sha256: stored.sha256, workspace: dir },
        "could not copy a document into the workspace; answering without that copy",
      );
      return { part, note: NOT_IN_WORKSPACE };
    }
  }

  /**
   * What a message that is not plain text brings for the model: its file (fetched and stored),
   * or its content as words — or what the user is told instead. The caption is the caller's.
   */
  async function readMessage(
    conversation: string,
    message: Message,
  ): Promise<{ parts: MediaPart[]; words: string[] } | { problem: string }> {
    const inbound = inboundOf(message, media.maxBytes);
    if (!inbound) return { problem: CANNOT_READ };
    if (inbound.kind === "refuse") return { problem: inbound.reply };
    if (inbound.kind === "text") return { parts: [], words: [inbound.text] };
    const fetched = await fetchFile(conversation, inbound.file);
    if ("reply" in fetched) {
      // A sticker Telegram cannot give any more (its set deleted) is still its emoji.
      if (fetched.unavailable && inbound.instead) return { parts: [], words: [inbound.instead] };
      return { problem: fetched.reply };
    }
    return { parts: [fetched.part], words: fetched.note ? [fetched.note] : [] };
  }

  /**
   * An album, as one turn: every item's file, the captions as the words. An item that cannot be
   * read is told to the user, by its place in the album, and the rest go ahead without it.
   */
  async function answerAlbum(ctx: TurnContext, updates: readonly unknown[]) {
    const items = updates
      .flatMap((u) => ((u as Update).message ? [(u as Update).message as Message] : []))
      .sort((a, b) => a.message_id - b.message_id);
    const leader = ctx.msg as Message;
    // In a group, one item's caption addresses the bot, or the album is not for it.
    if (leader.chat.type !== "private" && !items.some((m) => addressesBot(m, ctx.me))) return;
    if (items.length <= 1) return answerMessage(ctx);
    const { conversation } = ctx;
    const parts: MediaPart[] = [];
    const words: string[] = [];
    const problems: string[] = [];
    for (const [index, item] of items.entries()) {
      const position = `${index + 1} of ${items.length}`;
      const read = await readMessage(conversation, item);
      if ("problem" in read) {
        problems.push(`Album item ${position}: ${read.problem}`);
        words.push(`[Item ${position} of the album could not be read]`);
        continue;
      }
      parts.push(...read.parts);
      words.push(...read.words);
    }
    const captioned = items.filter((m) => m.caption);
    for (const item of captioned) {
      const at = items.indexOf(item) + 1;
      words.push(
        captioned.length === 1 ? (item.caption as string) : `[Item ${at}] ${item.caption}`,
      );
    }
    if (problems.length > 0) await reply(ctx, problems.join("\n\n"));
    if (parts.length === 0) return;
    return runAndAnswer(ctx, joinLines(...words), parts);
  }

  async function answerMessage(ctx: TurnContext) {
    const message = ctx.msg as Message;
    const read = await readMessage(ctx.conversation, message);
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

const joinLines = (...lines: string[]) => lines.filter((l) => l !== "").join("\n");
