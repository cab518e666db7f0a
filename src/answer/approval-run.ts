import type { Api } from "grammy";
import type { Approvals } from "../approvals/approvals.js";
import type { Continuation } from "../approvals/continuation.js";
import type { Approval } from "../approvals/store.js";
import type { InboxItem, Lease } from "../queue/inbox.js";
import { parseConversationKey } from "../scope/conversation-key.js";
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
    /** Whether the message whose turn paused was spoken: `/voice auto` then speaks the rest. */
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
    if (approval.status === "expired" || approval.status === "cancelled") {
      await showEnding(deps.api, approval, approvals.timeoutMs);
    }
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
      input: { text: "", resume: true },
      userSpoke: spokeBefore(await deps.store.loadContext(conversation), approval.eventId),
      failure: { log: "turn after an approval failed: Gemini" },
    });
  }

  return { run, sendRequests };
}

/** Whether the user's message before `eventId` (not a tool's answer) was a voice note. */
function spokeBefore(context: ChatContext, eventId: number): boolean {
  const asked = context.events.findLast(
    ({ id, event }) =>
      id < eventId &&
      event.role === "user" &&
      event.parts.some((part) => part.kind !== "function_response"),
  );
  return (
    asked?.event.parts.some((part) => part.kind === "media" && part.media === "voice") ?? false
  );
}
