import { Composer, type Context } from "grammy";
import { escapeHtml } from "../render/markdown-html.js";
import { periodStarts, usageReport } from "../usage/report.js";
import type { UsageStore } from "../usage/usage-store.js";
import type { Delivery } from "./delivery.js";
import { conversationKeyOf, threadOf } from "./topics.js";

/** /usage: this conversation's tokens today and this month, and what they cost. No model call. */
export function usageComposer(deps: {
  usage: UsageStore;
  delivery: Delivery;
  now?: () => Date;
}): Composer<Context> {
  const now = deps.now ?? (() => new Date());
  const composer = new Composer<Context>();
  composer.command("usage", async (ctx) => {
    const key = conversationKeyOf(ctx.msg);
    const starts = periodStarts(now());
    const [today, month] = await Promise.all([
      deps.usage.since(key, starts.today),
      deps.usage.since(key, starts.month),
    ]);
    const [title, ...lines] = usageReport(today, month, starts);
    await deps.delivery.sendHtml(
      ctx.chat.id,
      [`<b>${escapeHtml(title ?? "")}</b>`, ...lines.map(escapeHtml)].join("\n"),
      threadOf(ctx),
    );
  });
  return composer;
}
