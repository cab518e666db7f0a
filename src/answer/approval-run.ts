import type { Api } from "grammy";
import { GeminiError } from "../agent/gemini-errors.js";
import type { ReadAttachments } from "../agent/request-media.js";
import type { Agent } from "../agent/turn.js";
import type { Approvals } from "../approvals/approvals.js";
import type { Continuation } from "../approvals/continuation.js";
import type { Approval } from "../approvals/store.js";
import type { Logger } from "../logger.js";
import type { InboxItem, Lease } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import { parseConversationKey } from "../scope/conversation-key.js";
import { deliverTurnResult, liveMessagesOf } from "./answer-delivery.js";
import { sendApprovalRequests, showEnding } from "./approval-requests.js";
import type { Delivery } from "./delivery.js";
import { geminiFailureText } from "./gemini-failure.js";
import { type LiveAnswer, type LiveAnswerDeps, startLiveAnswer } from "./live-answer.js";

/**
 * Runs the turn that goes on after an approval was answered, ran out or was stopped: queued in
 * the inbox (src/approvals/continuation.ts), so a restart or another replica runs it like any
 * update, holding its lease.
 */
export function createContinuationRunner(deps: {
  agent: Pick<Agent, "runTurn">;
  approvals: Approvals;
  api: Pick<Api, "sendMessage" | "editMessageText">;
  delivery: Delivery;
  readAttachments: ReadAttachments;
  live: Pick<LiveAnswerDeps, "api" | "mode" | "pacer">;
  answers: RunningAnswers;
  logger: Logger;
}) {
  const { approvals } = deps;
  const sendRequests = (pending: readonly Approval[]) =>
    sendApprovalRequests(deps.api, approvals, pending);

  async function run(item: InboxItem, lease: Lease, continuation: Continuation): Promise<void> {
    const { approval_id: approvalId, conversation } = continuation.approval_continuation;
    const approval = await approvals.store.get(approvalId);
    const where = parseConversationKey(conversation);
    if (!approval || !where) return;
    if (approval.status === "expired" || approval.status === "cancelled") {
      await showEnding(deps.api, approval, approvals.timeoutMs);
    }
    const guard = () => lease.ensureHeld();
    // A draft's id must be positive, and the same for every attempt of this run.
    const draftId = -item.updateId;
    const live: LiveAnswer = startLiveAnswer({
      ...deps.live,
      delivery: deps.delivery,
      logger: deps.logger,
      chatId: where.chatId,
      threadId: where.threadId,
      privateChat: where.chatId > 0,
      draftId,
      ...liveMessagesOf(lease),
    });
    const running = deps.answers.start(
      conversation,
      where.chatId,
      draftId,
      item.updateId,
      approval.askedBy,
    );
    try {
      const result = await deps.agent.runTurn(conversation, {
        text: "",
        resume: true,
        updateId: item.updateId,
        guard,
        progress: live.progress,
        stop: running.signal,
        askedBy: approval.askedBy,
        sendFile: async (file) => {
          await guard();
          return (await deps.delivery.sendFile(where.chatId, file, where.threadId)).value;
        },
      });
      await guard();
      await deliverTurnResult({
        live,
        delivery: deps.delivery,
        read: deps.readAttachments,
        chatId: where.chatId,
        threadId: where.threadId,
        result,
        lease,
        sendRequests,
      });
    } catch (error) {
      await live.close();
      if (!(error instanceof GeminiError)) throw error;
      deps.logger.warn(
        { err: error, chat_id: conversation },
        "turn after an approval failed: Gemini",
      );
      await guard();
      await deps.delivery.sendHtml(
        where.chatId,
        escapeHtml(geminiFailureText(error)),
        where.threadId,
      );
    } finally {
      running.done();
    }
  }

  return { run, sendRequests };
}
