import type { Api, InlineKeyboard } from "grammy";
import type { Message } from "grammy/types";
import { splitMessage } from "../../render/chunk.js";

type Where = { chatId: number; threadId: number | undefined };

/**
 * Sends a command's HTML reply in as many messages as Telegram's length limit takes, its buttons
 * under the last: a full /memory or /tasks list is longer than one message may be. Returns the
 * last message.
 */
export async function sendListing(
  api: Api,
  where: Where,
  html: string,
  keyboard?: InlineKeyboard,
): Promise<Message.TextMessage> {
  const pieces = splitMessage(html);
  let last: Message.TextMessage | undefined;
  for (const [i, piece] of pieces.entries()) {
    last = await api.sendMessage(where.chatId, piece, {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      ...(keyboard && i === pieces.length - 1 ? { reply_markup: keyboard } : {}),
      ...(where.threadId === undefined ? {} : { message_thread_id: where.threadId }),
    });
  }
  return last as Message.TextMessage;
}

/**
 * Shows a listing anew in the message whose button was pressed: edited in place when it fits in
 * one message, else that message says so and the listing comes again below.
 */
export async function editListing(
  api: Api,
  where: Where & { messageId: number },
  html: string,
  keyboard?: InlineKeyboard,
): Promise<void> {
  if (splitMessage(html).length === 1) {
    await api.editMessageText(where.chatId, where.messageId, html, {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      ...(keyboard ? { reply_markup: keyboard } : {}),
    });
    return;
  }
  await api.editMessageText(where.chatId, where.messageId, "Updated: the list is below.");
  await sendListing(api, where, html, keyboard);
}
