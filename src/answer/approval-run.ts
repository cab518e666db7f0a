import type { Api } from "grammy";
import type { Approvals } from "../approvals/approvals.js";
import type { Continuation } from "../approvals/continuation.js";
import type { Approval } from "../approvals/store.js";
import type { InboxItem, Lease } from "../queue/inbox.js";
import { parseConversationKey } from "../scope/conversation-key.js";
import type { SessionEvent } from "../session/events.js";
import type { ChatContext, SessionStore } from "../session/store.js";
import { type TurnAnswererDeps, turnAnswerer } from "./answer-turn.js";
import { sendApprovalRequests, showEnding } from "./approval-requests.js";

/**
 * Runs the turn that goes on after an approval was answered, ran out or was stopped: queued in
 * the inbox (src/approvals/continuation.ts), so a restart or another replica runs it like any
 * update, holding its lease.
 */
export function createContinuationRunner(
  deps: Omit<TurnAnswererDeps, "sendRequests"> & {
    approvals: Approvals;
    api: Pick<Api, "sendMessage" | "editMessageText">;
    /** The message whose turn paused: if spoken, `/voice auto` speaks the rest. */
    store: Pick<SessionStore, "loadContext">;
  },
) {
  const { approvals } = deps;
  const sendRequests = (pending: readonly Approval[]) =>
    sendApprovalRequests(deps.api, approvals, pending);
  const answerTurn = turnAnswerer({ ...deps, sendRequests });

  async function run(item: InboxItem, lease: Lease, continuation: Continuation): Promise<void> {
    const { approval_id: approvalId, conversation } = continuation.approval_continuation;
    const approval = await approvals.store.get(approvalId);
    const where = parseConversationKey(conversation);
    if (!approval || !where) return;
    // A time running out queues a turn for each request; a stop or a new message one for all
    // the requests it ended, so each of those shows its ending here.
    const ended =
      approval.status === "expired"
        ? [approval]
        : approval.status === "cancelled" || approval.status === "superseded"
          ? (await approvals.store.ofEvent(conversation, approval.eventId)).filter(
              (a) => a.status === approval.status,
            )
          : [];
    for (const each of ended) await showEnding(deps.api, each, approvals.timeoutMs);
    const asked = askedBefore(await deps.store.loadContext(conversation), approval.eventId);
    await answerTurn({
      lease,
      updateId: item.updateId,
      conversation,
      chatId: where.chatId,
      threadId: where.threadId,
      privateChat: where.chatId > 0,
      // A draft's id must be positive, and the same for every attempt of this run.
      draftId: -item.updateId,
      askedBy: approval.askedBy,
      // A scheduled task's run stays one after its pause: its tools keep their limits.
      input: { text: "", resume: true, ...(asked?.origin ? { origin: asked.origin } : {}) },
      userSpoke:
        asked?.parts.some((part) => part.kind === "media" && part.media === "voice") ?? false,
      failure: { log: "turn after an approval failed: Gemini" },
    });
  }

  return { run, sendRequests };
}

/** The message before `eventId` that the turn answers (not a tool's answer). */
function askedBefore(context: ChatContext, eventId: number): SessionEvent | undefined {
  return context.events.findLast(
    ({ id, event }) =>
      id < eventId &&
      event.role === "user" &&
      event.parts.some((part) => part.kind !== "function_response"),
  )?.event;
}
