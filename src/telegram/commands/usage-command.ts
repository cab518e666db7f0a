import { Composer } from "grammy";
import type { Delivery } from "../../answer/delivery.js";
import { escapeHtml } from "../../render/markdown-html.js";
import { periodStarts, usageReport } from "../../usage/report.js";
import type { UsageStore } from "../../usage/usage-store.js";
import type { TurnContext } from "../turn-context.js";

/** /usage: this conversation's tokens today and this month, and what they cost. No model call. */
export function usageComposer(deps: {
  usage: UsageStore;
  delivery: Delivery;
  /** TIME_ZONE: where "today" and "this month" begin. */
  timeZone: string;
  now?: () => Date;
}): Composer<TurnContext> {
  const now = deps.now ?? (() => new Date());
  const composer = new Composer<TurnContext>();
  composer.command("usage", async (ctx) => {
    const key = ctx.conversation;
    const starts = periodStarts(now(), deps.timeZone);
    const [today, month] = await Promise.all([
      deps.usage.since(key, starts.today),
      deps.usage.since(key, starts.month),
    ]);
    const [title, ...lines] = usageReport(today, month, starts);
    await deps.delivery.sendHtml(
      ctx.chat.id,
      [`<b>${escapeHtml(title ?? "")}</b>`, ...lines.map(escapeHtml)].join("\n"),
      ctx.thread,
    );
  });
  return composer;
}
