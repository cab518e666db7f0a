import type { Api } from "grammy";
import type { Logger } from "../logger.js";
import { escapeHtml, renderMarkdown } from "../render/markdown-html.js";
import type { Delivery } from "./delivery.js";
import type { DraftView } from "./draft-view.js";
import type { EditView } from "./edit-view.js";

/** What the live view shows: the answer so far, and what the model is doing, if anything. */
export type Frame = { readonly markdown: string; readonly status?: string };

/**
 * How an answer shows while it is written: a draft (private chats) or a message edited in place.
 * Either tells how to show a frame now, and what to show instead once Telegram refuses it.
 */
export type LiveView = DraftView | EditView;

/** What either view shows an answer through, and where. */
export type ViewDeps = {
  api: Api;
  delivery: Delivery;
  logger: Logger;
  chatId: number;
  threadId: number | undefined;
};

/** What to show after Telegram refused a view: another one, or none (nothing live any more). */
export type Replacement = { by: LiveView | undefined };

/** A frame as Telegram HTML: the answer rendered, the status in italics after it. */
export function frameHtml({ markdown, status }: Frame): string {
  if (status === undefined) return renderMarkdown(markdown);
  const note = `<i>${escapeHtml(status)}</i>`;
  return markdown.trim() === "" ? note : `${renderMarkdown(markdown)}\n\n${note}`;
}

export const inThread = (threadId: number | undefined) =>
  threadId === undefined ? {} : { message_thread_id: threadId };
