import type { Message, Update } from "grammy/types";
import { escapeHtml } from "../render/markdown-html.js";
import { COMMANDS } from "./commands/command-list.js";
import { conversationKeyOf, threadOfMessage } from "./topics.js";

export type BotIdentity = { id: number; username: string };

export type UpdateRoute =
  /** Store in the inbox and run: an allowed user talks to the bot (in this conversation). */
  | { action: "run"; conversation: string }
  /** Someone not on the allowlist wrote to the bot in private: tell them their id; store nothing. */
  | { action: "reject"; chatId: number; userId: number; threadId: number | undefined }
  /**
   * Not for us: other update kinds, service messages, group chatter that doesn't address the bot.
   * With `who`, someone addressed the bot and was turned away, for the operator to see why.
   */
  | { action: "ignore"; why: string; who?: number };

/** Telegram's own account: service notices and a linked channel's automatic forwards. */
export const TELEGRAM_SERVICE_USER_ID = 777000;

/** Who speaks: a user, a group's anonymous administrator (as the group), or a channel. */
export type Sender = { id: number; kind: "user" | "group" | "channel" };

/**
 * The sender the allowlist judges. An anonymous administrator's message comes from
 * GroupAnonymousBot with the group as sender_chat, a post as a channel from Channel_Bot with the
 * channel: the chat is the sender, and is allowed when its id is in ALLOWED_USER_IDS.
 */
export function senderOf(message: Message): Sender | undefined {
  if (message.sender_chat) {
    const kind = message.sender_chat.id === message.chat.id ? "group" : "channel";
    return { id: message.sender_chat.id, kind };
  }
  if (!message.from || message.from.is_bot) return undefined;
  return { id: message.from.id, kind: "user" };
}

/**
 * What a message holds when it is one someone wrote. Any other message is a service message (a
 * pin, members joining or leaving, a new title, a payment, a migration…), which gets no reply.
 */
const CONTENT = [
  "text",
  "rich_message",
  "photo",
  "voice",
  "audio",
  "document",
  "video",
  "video_note",
  "animation",
  "sticker",
  "contact",
  "location",
  "venue",
  "poll",
  "dice",
  "story",
  "game",
  "invoice",
  "checklist",
  "paid_media",
] as const;

export const isServiceMessage = (message: Message) => !CONTENT.some((key) => key in message);

/** A group that became a supergroup: said in the old group and in the new supergroup. */
export const isMigration = (message: Message) =>
  message.migrate_to_chat_id !== undefined || message.migrate_from_chat_id !== undefined;

const OWN_COMMANDS = new Set<string>(COMMANDS.map((c) => c.command));

/** A mention of the bot, a reply to it or one of its commands (what a group message needs). */
export function addressesBot(message: Message, bot: BotIdentity): boolean {
  const reply = message.reply_to_message;
  // In a topic the bot opened, every message "replies" to the topic's creation: that is no reply.
  if (reply?.from?.id === bot.id && !reply.forum_topic_created) return true;
  const text = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const handle = `@${bot.username}`.toLowerCase();
  return entities.some((e) => {
    const piece = text.slice(e.offset, e.offset + e.length).toLowerCase();
    if (e.type === "mention") return piece === handle;
    if (e.type !== "bot_command" || e.offset !== 0) return false;
    // A bare /command reaches every bot of the group: only Koroku's own are meant for it.
    const [command = "", target] = piece.slice(1).split("@");
    return target === undefined ? OWN_COMMANDS.has(command) : `@${target}` === handle;
  });
}

const GROUP_REFUSALS: Record<Sender["kind"], string> = {
  user: "a user not on the allowlist, in a group",
  group: "an anonymous administrator of a group not on the allowlist (allow the group's id)",
  channel: "a post as a channel not on the allowlist (allow the channel's id)",
};

/**
 * Decides what happens to an update before anything is stored: private chats with allowed users
 * run; in groups only messages that mention the bot, reply to it or are one of its commands.
 * Migrations run whoever sent them: they move the conversation, nothing more.
 */
export function routeUpdate(
  update: Update,
  allowed: ReadonlySet<number>,
  bot: BotIdentity,
): UpdateRoute {
  const query = update.callback_query;
  if (query) {
    // A button of the bot's own message (/tasks): pressed by an allowed user, it runs in the
    // conversation of that message. A stranger's press is not answered: buttons are not addressed
    // to them.
    const pressed = query.message;
    if (!pressed) return { action: "ignore", why: "a button of a message too old to read" };
    // A group on the allowlist by its id lets its anonymous administrators in: their presses come
    // from their own accounts, which the bot checks are an administrator's (bot.ts).
    const allowedGroup = pressed.chat.type !== "private" && allowed.has(pressed.chat.id);
    if (!allowed.has(query.from.id) && !allowedGroup) {
      return {
        action: "ignore",
        why: "a button pressed by a user not allowed",
        who: query.from.id,
      };
    }
    return { action: "run", conversation: conversationKeyOf(pressed) };
  }
  const message = update.message;
  if (!message) return { action: "ignore", why: "not a message" };
  if (isMigration(message)) return { action: "run", conversation: conversationKeyOf(message) };
  if (isServiceMessage(message)) return { action: "ignore", why: "a service message" };
  if (message.from?.id === TELEGRAM_SERVICE_USER_ID || message.is_automatic_forward) {
    return { action: "ignore", why: "Telegram's service account", who: TELEGRAM_SERVICE_USER_ID };
  }
  const sender = senderOf(message);
  if (!sender) return { action: "ignore", why: "sent by a bot, or by nobody" };
  const { chat } = message;
  const addressed = chat.type === "private" || addressesBot(message, bot);
  // An album's caption, and with it a mention, is on one of its items: an allowed sender's other
  // items are stored too, and the album runs only if one of them addresses the bot.
  const albumItem = message.media_group_id !== undefined && allowed.has(sender.id);
  if (!addressed && !albumItem) return { action: "ignore", why: "not addressed to the bot" };
  if (allowed.has(sender.id)) return { action: "run", conversation: conversationKeyOf(message) };
  if (chat.type === "private") {
    const threadId = threadOfMessage(message);
    return { action: "reject", chatId: chat.id, userId: sender.id, threadId };
  }
  return { action: "ignore", why: GROUP_REFUSALS[sender.kind], who: sender.id };
}

/** `/stop` or `/stop@thisbot` as the message's first word. */
export function isStopCommand(message: Message, bot: BotIdentity): boolean {
  const command = message.entities?.find((e) => e.type === "bot_command" && e.offset === 0);
  if (command === undefined || message.text === undefined) return false;
  const [name, at] = message.text.slice(0, command.length).toLowerCase().split("@");
  return name === "/stop" && (at === undefined || at === bot.username.toLowerCase());
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
