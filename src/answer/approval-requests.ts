import { type Api, InlineKeyboard } from "grammy";
import type { Approvals } from "../approvals/approvals.js";
import { ENDINGS, requestTitle, shownArguments } from "../approvals/request-text.js";
import type { Approval } from "../approvals/store.js";
import { escapeHtml } from "../render/markdown-html.js";

// A waiting turn's answer in the chat: each request with its buttons, then how it ended.

const minutes = (ms: number) =>
  ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;

/** The request as the user sees it: the tool, its arguments pretty-printed and cut. */
export function approvalHtml(approval: Approval, timeoutMs: number): string {
  const ending = ENDINGS[approval.status];
  return [
    requestTitle(`<code>${escapeHtml(approval.tool)}</code>`),
    `<pre>${escapeHtml(shownArguments(approval.args))}</pre>`,
    ending === ""
      ? `Unanswered in ${minutes(timeoutMs)}, it counts as denied.`
      : `<b>${ending}</b>`,
  ].join("\n");
}

const keyboardOf = (approval: Approval) =>
  new InlineKeyboard()
    .text("Allow once", `approval:${approval.id}:once`)
    .text("Always allow", `approval:${approval.id}:always`)
    .text("Deny", `approval:${approval.id}:deny`);

/** Shows each waiting request that has no message yet, with its buttons, and records it. */
export async function sendApprovalRequests(
  api: Pick<Api, "sendMessage">,
  approvals: Pick<Approvals, "store" | "timeoutMs">,
  pending: readonly Approval[],
): Promise<void> {
  for (const approval of pending) {
    if (approval.messageId !== undefined) continue;
    const sent = await api.sendMessage(
      approval.chatId,
      approvalHtml(approval, approvals.timeoutMs),
      {
        parse_mode: "HTML",
        reply_markup: keyboardOf(approval),
        ...(approval.threadId === undefined ? {} : { message_thread_id: approval.threadId }),
      },
    );
    await approvals.store.setMessage(approval.id, sent.message_id);
  }
}

/** Shows how a request ended on its message, and takes its buttons away. */
export async function showEnding(
  api: Pick<Api, "editMessageText">,
  approval: Approval,
  timeoutMs: number,
): Promise<void> {
  if (approval.messageId === undefined) return;
  await api
    .editMessageText(approval.chatId, approval.messageId, approvalHtml(approval, timeoutMs), {
      parse_mode: "HTML",
    })
    // Shown already (a second run), or deleted by the user: the ending is stored either way.
    .catch(() => {});
}
