import type { Chat, MessageEntity, Update, User, UserFromGetMe } from "grammy/types";

/** Realistic Telegram objects for the fake Bot API and for tests that post updates themselves. */

export interface TextUpdateParams {
  readonly updateId: number;
  readonly messageId: number;
  readonly text: string;
  /** Defaults to the sender's private chat (chat id = user id). */
  readonly chatId?: number;
  readonly userId?: number;
  readonly firstName?: string;
  /** Unix seconds; defaults to now. */
  readonly date?: number;
  /** A message in this topic (of a forum supergroup, or of a private chat with topics). */
  readonly threadId?: number;
  /** The supergroup is a forum (implied by a threadId there); its General topic has no threadId. */
  readonly forum?: boolean;
}

export const DEFAULT_USER_ID = 424242;

const COMMAND = /^\/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]+)?/;
const MENTION = /(?<![A-Za-z0-9_])@[A-Za-z0-9_]{5,32}\b/g;

/** The bot's id is the number before the colon of its token, as with real tokens. */
export function botFromToken(token: string): UserFromGetMe {
  const id = Number(/^(\d+):\S+$/.exec(token)?.[1]);
  if (!Number.isSafeInteger(id) || id <= 0) {
    throw new Error(`fake Telegram: token "${token}" must look like "<bot id>:<secret>"`);
  }
  return {
    id,
    is_bot: true,
    first_name: "Koroku",
    username: "koroku_test_bot",
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
    has_topics_enabled: false,
    allows_users_to_create_topics: false,
    can_manage_bots: false,
    supports_join_request_queries: false,
  };
}

export function botAsUser(bot: UserFromGetMe): User {
  return { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
}

/** Positive ids are private chats; "-100…" ids are supergroups, other negative ids groups. */
export function chatFor(id: number): Exclude<Chat, Chat.ChannelChat> {
  if (id > 0) return { id, type: "private", first_name: "Test User" };
  if (String(id).startsWith("-100")) return { id, type: "supergroup", title: "Test Supergroup" };
  return { id, type: "group", title: "Test Group" };
}

/** A text message update as Telegram sends it, with the bot_command entity grammY's command() needs. */
export function buildTextUpdate(params: TextUpdateParams): Update {
  const userId = params.userId ?? DEFAULT_USER_ID;
  const command = COMMAND.exec(params.text)?.[0];
  const entities: MessageEntity[] =
    command === undefined ? [] : [{ type: "bot_command", offset: 0, length: command.length }];
  // Telegram marks every @username as a mention (offsets in UTF-16 units, as JavaScript's).
  for (const m of params.text.matchAll(MENTION)) {
    entities.push({ type: "mention", offset: m.index, length: m[0].length });
  }
  const chat = chatFor(params.chatId ?? userId);
  const topic =
    params.threadId === undefined
      ? {}
      : { is_topic_message: true as const, message_thread_id: params.threadId };
  return {
    update_id: params.updateId,
    message: {
      message_id: params.messageId,
      from: { id: userId, is_bot: false, first_name: params.firstName ?? "Test User" },
      // Only a forum supergroup has topics among groups.
      chat:
        chat.type === "supergroup" && (params.forum || params.threadId !== undefined)
          ? { ...chat, is_forum: true }
          : chat,
      date: params.date ?? unixNow(),
      ...topic,
      text: params.text,
      ...(entities.length > 0 ? { entities } : {}),
    },
  };
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
