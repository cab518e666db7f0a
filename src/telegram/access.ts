import type { Message, Update } from "grammy/types";
import { conversationKeyOf } from "./conversation-key.js";
import { escapeHtml } from "./render.js";
import { threadOfMessage } from "./topics.js";

export type BotIdentity = { id: number; username: string };

export type UpdateRoute =
  /** Store in the inbox and run: an allowed user talks to the bot (in this conversation). */
  | { action: "run"; conversation: string }
  /** Someone not on the allowlist addressed the bot: tell them their id; store nothing. */
  | { action: "reject"; chatId: number; userId: number; threadId: number | undefined }
  /** Not for us: edits, other update types, group chatter that doesn't address the bot. */
  | { action: "ignore" };

function mentionsBot(message: Message, bot: BotIdentity): boolean {
  const text = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const handle = `@${bot.username}`.toLowerCase();
  return entities.some((e) => {
    const piece = text.slice(e.offset, e.offset + e.length).toLowerCase();
    if (e.type === "mention") return piece === handle;
    // In groups a bare /command reaches every bot; /command@name only the named one.
    if (e.type === "bot_command" && e.offset === 0)
      return !piece.includes("@") || piece.endsWith(handle);
    return false;
  });
}

/**
 * Decides what happens to an update before anything is stored: private chats with allowed users
 * run; in groups only messages that mention the bot, reply to it or start with a command count.
 */
export function routeUpdate(
  update: Update,
  allowed: ReadonlySet<number>,
  bot: BotIdentity,
): UpdateRoute {
  const message = update.message;
  if (!message?.from || message.from.is_bot) return { action: "ignore" };
  const { chat } = message;
  if (chat.type !== "private") {
    const addressed = mentionsBot(message, bot) || message.reply_to_message?.from?.id === bot.id;
    if (!addressed) return { action: "ignore" };
  }
  if (!allowed.has(message.from.id)) {
    const threadId = threadOfMessage(message);
    return { action: "reject", chatId: chat.id, userId: message.from.id, threadId };
  }
  return { action: "run", conversation: conversationKeyOf(message) };
}

export function rejectionHtml(userId: number): string {
  return [
    "Sorry, Koroku is a private assistant and you are not on its list of allowed users.",
    "",
    `Your Telegram user id is <code>${userId}</code>. To be allowed, ask the operator to add it to the configuration and restart the bot:`,
    `<code>${escapeHtml(`ALLOWED_USER_IDS=${userId}`)}</code>`,
    "(several ids are separated by commas)",
  ].join("\n");
}
