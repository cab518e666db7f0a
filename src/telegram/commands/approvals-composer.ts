import { type CallbackQueryContext, Composer, InlineKeyboard } from "grammy";
import type { Chat } from "grammy/types";
import { showEnding } from "../../answer/approval-requests.js";
import type { Approvals } from "../../approvals/approvals.js";
import { ENDINGS } from "../../approvals/request-text.js";
import type { Decision } from "../../approvals/store.js";
import { grantsReport, type Markup, serversReport } from "../../approvals/tools-report.js";
import type { ServerStatus } from "../../mcp/server-connection.js";
import { escapeHtml } from "../../render/markdown-html.js";
import { scopeName, scopeOf } from "../../scope/recall-scope.js";
import type { MayStop } from "../stop-permission.js";
import type { TurnContext } from "../turn-context.js";
import { sendListing } from "./listing.js";

const ANSWER_DATA = /^approval:(\d+):(once|always|deny)$/;
const REVOKE_DATA = /^tools:revoke:(\d+)$/;
const DECISIONS: Record<string, Decision> = { once: "allowed", always: "always", deny: "denied" };
const GRANT_GONE = "That grant is gone already.";

const HTML: Markup = {
  bold: (text) => `<b>${escapeHtml(text)}</b>`,
  code: (text) => `<code>${escapeHtml(text)}</code>`,
  text: escapeHtml,
};

export type ApprovalsComposerDeps = {
  approvals: Approvals;
  /** The MCP servers and their tools, for /tools. */
  servers(): Promise<ServerStatus[]>;
  /**
   * Who may answer a request (the one whose turn it is) or revoke an "always" (the one who gave
   * it): they, or a group's administrator, as for a stop.
   */
  mayAnswer: MayStop;
  /** Told the conversation an answer queued a turn for, so that the dispatcher looks at once. */
  onQueued(conversation: string): void;
};

/**
 * The buttons of tool approvals, and /tools: MCP servers, their tools and state, and the
 * "always allow" grants of this scope, each with a button to revoke it.
 */
export function approvalsComposer(deps: ApprovalsComposerDeps): Composer<TurnContext> {
  const { approvals } = deps;
  const composer = new Composer<TurnContext>();

  /**
   * Whether the one who pressed a button may act for `owner` (who asked, or who gave an
   * "always") in `chat`; when not, an alert tells them why.
   */
  async function mayPress(
    ctx: CallbackQueryContext<TurnContext>,
    chat: Pick<Chat, "id" | "type">,
    owner: number | undefined,
    refusal: string,
  ): Promise<boolean> {
    const presser = { id: ctx.callbackQuery.from.id, kind: "user" as const };
    if (await deps.mayAnswer(chat, presser, owner)) return true;
    await ctx.answerCallbackQuery({ text: refusal, show_alert: true });
    return false;
  }

  composer.callbackQuery(ANSWER_DATA, async (ctx) => {
    const id = Number(ctx.match[1]);
    const decision = DECISIONS[ctx.match[2] as string] as Decision;
    const message = ctx.callbackQuery.message;
    const approval = await approvals.store.get(id);
    if (!message || !approval || approval.conversation !== ctx.conversation) {
      await ctx.answerCallbackQuery({ text: "This request is no longer waiting." });
      return;
    }
    const refusal = "Only the person who asked, or an admin of this group, can answer this.";
    if (!(await mayPress(ctx, message.chat, approval.askedBy, refusal))) return;
    await ctx.lease.ensureHeld();
    const answered = await approvals.answer(id, decision, ctx.callbackQuery.from.id);
    if (!answered) {
      await ctx.answerCallbackQuery({ text: "This request was already answered, or ran out." });
      return;
    }
    deps.onQueued(answered.conversation);
    // The answer is stored: its message shows it first, whatever becomes of the press's answer.
    await showEnding(ctx.api, { ...answered, messageId: message.message_id }, approvals.timeoutMs);
    await ctx.answerCallbackQuery({ text: ENDINGS[answered.status] });
  });

  composer.command("tools", async (ctx) => {
    const scope = scopeName(scopeOf({ key: ctx.conversation, chatType: ctx.chat.type }));
    const grants = await approvals.store.grants(scope);
    const parts = [
      serversReport(await deps.servers(), approvals.policyOf, HTML),
      grantsReport(grants, HTML),
    ];
    await ctx.lease.ensureHeld();
    await sendListing(
      ctx.api,
      { chatId: ctx.chat.id, threadId: ctx.thread },
      parts.join("\n\n"),
      grants.length > 0
        ? InlineKeyboard.from(
            grants.map((g) => [InlineKeyboard.text(`Revoke ${g.tool}`, `tools:revoke:${g.id}`)]),
          )
        : undefined,
    );
  });

  composer.callbackQuery(REVOKE_DATA, async (ctx) => {
    const message = ctx.callbackQuery.message;
    if (!message) return;
    const scope = scopeName(scopeOf({ key: ctx.conversation, chatType: message.chat.type }));
    const id = Number(ctx.match[1]);
    const grant = (await approvals.store.grants(scope)).find((g) => g.id === id);
    if (!grant) {
      await ctx.answerCallbackQuery({ text: GRANT_GONE });
      return;
    }
    const refusal = "Only the person who allowed it, or an admin of this group, can revoke it.";
    if (!(await mayPress(ctx, message.chat, grant.grantedBy, refusal))) return;
    await ctx.lease.ensureHeld();
    const revoked = await approvals.store.revoke(scope, id);
    await ctx.answerCallbackQuery({
      text: revoked ? "Revoked: it asks again from now on." : GRANT_GONE,
    });
  });

  return composer;
}
