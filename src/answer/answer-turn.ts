import { GeminiError } from "../agent/gemini-errors.js";
import type { ReadAttachments } from "../agent/request-media.js";
import type { Agent, TurnInput, TurnProgress, TurnResult } from "../agent/turn.js";
import type { Approval } from "../approvals/store.js";
import type { Logger } from "../logger.js";
import type { Lease } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import { speaksTo } from "../voice/voice-settings.js";
import { deliverTurnResult, liveMessagesOf } from "./answer-delivery.js";
import type { Delivery } from "./delivery.js";
import { geminiFailureText } from "./gemini-failure.js";
import { type LiveAnswer, type LiveAnswerDeps, startLiveAnswer } from "./live-answer.js";
import { toolFileSender } from "./tool-file-sender.js";
import { type ConversationVoice, speakAfter } from "./voice-delivery.js";

export type TurnAnswererDeps = {
  agent: Pick<Agent, "runTurn">;
  delivery: Delivery;
  /** The bytes of the files an answer sends. */
  readAttachments: ReadAttachments;
  /** How the answer shows while it is written; a stop reaches it too. */
  live: Pick<LiveAnswerDeps, "api" | "mode" | "pacer">;
  answers: RunningAnswers;
  logger: Logger;
  /** Shows tool calls that wait for the user's yes, with their buttons. */
  sendRequests?(pending: readonly Approval[]): Promise<void>;
  /** Spoken replies (VOICE_REPLIES, /voice); none: text only. */
  voice?: ConversationVoice | undefined;
};

/** One turn to run and answer, wherever it came from (a message, a scheduled task, an approval). */
export type TurnToAnswer = {
  /** The inbox lease the turn runs under: each write and each send checks it first. */
  lease: Lease;
  updateId: number;
  conversation: string;
  chatId: number;
  threadId: number | undefined;
  /** Drafts exist in private chats only. */
  privateChat: boolean;
  /** Names the draft (its stop button): positive, the same for every run of the update. */
  draftId: number;
  /** Who the answer is for (a stop checks it); undefined when unknown. */
  askedBy: number | undefined;
  /** What the turn gets besides what answering it adds (the lease, the live view, the stop). */
  input: Omit<TurnInput, "updateId" | "guard" | "progress" | "stop" | "askedBy" | "sendFile">;
  /** The user spoke (a voice note): /voice auto answers it with one. */
  userSpoke?: boolean;
  logger?: Logger;
  /** What the log says when Gemini failed, and what the chat is told (geminiFailureText's words). */
  failure: { log: string; text?(error: GeminiError): string };
  /** What the turn reports as it goes; by default the live answer's progress. */
  progress?(live: LiveAnswer): TurnProgress;
  /** What must have ended before the answer goes out (notices sent while the turn ran). */
  settle?(): Promise<unknown>;
  /** The answer's words are out, and its voice notes are being made. */
  speaking?(): void;
  /** A failure the caller deals with itself (true), after the live view closed. */
  handled?(error: unknown): Promise<boolean>;
};

/**
 * The one way a turn is run and answered: the live view starts, the turn runs under the lease and
 * can be stopped, then the answer is delivered (files, words, voice notes, or the approval
 * requests it waits for), each part recorded so a run after a crash sends only the rest. Gemini
 * refusing or away is told in the chat, and the turn ends; any other failure closes the live view
 * and is thrown for the inbox to run the update again. The result, or undefined when Gemini failed.
 */
export function turnAnswerer(deps: TurnAnswererDeps) {
  const { delivery } = deps;
  return async function answerTurn(turn: TurnToAnswer): Promise<TurnResult | undefined> {
    const { lease, conversation, chatId, threadId } = turn;
    const logger = turn.logger ?? deps.logger;
    const live = startLiveAnswer({
      ...deps.live,
      delivery,
      logger: deps.logger,
      chatId,
      threadId,
      privateChat: turn.privateChat,
      draftId: turn.draftId,
      ...liveMessagesOf(lease),
    });
    const running = deps.answers.start(
      conversation,
      chatId,
      turn.draftId,
      turn.updateId,
      turn.askedBy,
    );
    try {
      // Decided before the turn: after the answer, nothing but the voice reply itself may wait on
      // the database (a text answer's update is then finished by the inbox alone).
      const voice = deps.voice;
      const spoken =
        voice && speaksTo(await voice.settings.modeOf(conversation), turn.userSpoke ?? false);
      const result = await deps.agent.runTurn(conversation, {
        ...turn.input,
        updateId: turn.updateId,
        guard: () => lease.ensureHeld(),
        progress: turn.progress?.(live) ?? live.progress,
        stop: running.signal,
        askedBy: turn.askedBy,
        ...toolFileSender({ delivery, logger: deps.logger, chatId, threadId, lease }),
      });
      await turn.settle?.();
      await lease.ensureHeld();
      const after =
        voice && spoken && !result.stopped
          ? speakAfter({
              replies: voice.replies,
              delivery,
              conversation,
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
        read: deps.readAttachments,
        chatId,
        threadId,
        result,
        lease,
        sendRequests: deps.sendRequests,
        after: after && {
          ...after,
          run(view) {
            turn.speaking?.();
            return after.run(view);
          },
        },
      });
      return result;
    } catch (error) {
      await live.close();
      if (await turn.handled?.(error)) return undefined;
      // Anything but Gemini refusing or being away (Telegram or the database failing, a bug) is
      // left to the inbox: it runs the update again later, reusing what was stored, and tells
      // the user only if it gives up.
      if (!(error instanceof GeminiError)) throw error;
      logger.warn(
        { err: error, chat_id: conversation, update_id: turn.updateId },
        turn.failure.log,
      );
      await lease.ensureHeld();
      const text = turn.failure.text ?? geminiFailureText;
      try {
        await delivery.sendHtml(chatId, escapeHtml(text(error)), threadId);
      } catch (sendError) {
        // The chat may be gone too: then the apology's failure is the one to handle.
        if (await turn.handled?.(sendError)) return undefined;
        throw sendError;
      }
      return undefined;
    } finally {
      running.done();
    }
  };
}

export type AnswerTurn = ReturnType<typeof turnAnswerer>;
