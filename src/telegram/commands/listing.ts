import type { Api, InlineKeyboard } from "grammy";
import type { Message } from "grammy/types";
import { splitMessage } from "../../render/chunk.js";

type Where = { chatId: number; threadId: number | undefined };

/**
 * Sends a command's HTML reply in as many messages as Telegram's length limit takes, its buttons
 * under the last: a full /memory or /tasks list is longer than one message may be.
 */
export function sendListing(
  api: Api,
  where: Where,
  html: string,
  keyboard?: InlineKeyboard,
): Promise<void> {
  return sendPieces(api, where, splitMessage(html), keyboard);
}

async function sendPieces(
  api: Api,
  where: Where,
  pieces: readonly string[],
  keyboard: InlineKeyboard | undefined,
): Promise<void> {
  for (const [i, piece] of pieces.entries()) {
    await api.sendMessage(where.chatId, piece, {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      ...(keyboard && i === pieces.length - 1 ? { reply_markup: keyboard } : {}),
      ...(where.threadId === undefined ? {} : { message_thread_id: where.threadId }),
    });
  }
}

/**
 * Shows a listing anew in the message whose button was pressed: edited in place when it fits in
 * one message and the pressed one was the whole listing (its first line has `title`), else that
 * message says so and the listing comes again below, so no earlier piece is left out of date.
 */
export async function editListing(
  api: Api,
  where: Where & { message: Pick<Message, "message_id" | "text">; title: string },
  html: string,
  keyboard?: InlineKeyboard,
): Promise<void> {
  const wholeBefore = where.message.text?.split("\n", 1)[0]?.includes(where.title) === true;
  const messageId = where.message.message_id;
  const pieces = splitMessage(html);
  if (wholeBefore && pieces.length === 1) {
    await api.editMessageText(where.chatId, messageId, html, {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      ...(keyboard ? { reply_markup: keyboard } : {}),
    });
    return;
  }
  await api.editMessageText(where.chatId, messageId, "Updated: the list is below.");
  await sendPieces(api, where, pieces, keyboard);
}
