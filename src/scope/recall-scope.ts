import { parseConversationKey } from "./conversation-key.js";

/** Telegram's chat types, and the terminal chat's. */
export type ChatType = "private" | "group" | "supergroup" | "channel" | "terminal";

/** A conversation as the scopes see it: its key (`<chat_id>` or `<chat_id>:<thread_id>`) and chat. */
export type Conversation = { key: string; chatType: ChatType };

/**
 * Who may recall what (DESIGN.md, "Recall scopes"): a private chat and all its topics share the
 * user's scope, a group or forum and its topics the group's, and the terminal chat is one of its
 * own. Nothing crosses from one scope to another: the workspace, and later search, memory and
 * the profile, are kept per scope.
 */
export type RecallScope =
  | { kind: "private"; userId: number }
  | { kind: "group"; chatId: number }
  | { kind: "terminal" };

function chatIdOf(key: string, chatType: ChatType): number {
  const ref = parseConversationKey(key);
  if (!ref)
    throw new Error(`conversation "${key}" has no Telegram chat id, so it is no ${chatType} chat`);
  return ref.chatId;
}

/**
 * The scope of a conversation. Telegram gives a private chat the user's id, which is positive, and
 * groups, supergroups and channels negative ids: a key that disagrees with its chat type is a bug,
 * refused rather than guessed at.
 */
export function scopeOf(conversation: Conversation): RecallScope {
  const { key, chatType } = conversation;
  if (chatType === "terminal") return { kind: "terminal" };
  const chatId = chatIdOf(key, chatType);
  if (chatType === "private") {
    if (chatId <= 0)
      throw new Error(`conversation "${key}" cannot be a private chat: its id is not a user's`);
    return { kind: "private", userId: chatId };
  }
  if (chatId >= 0)
    throw new Error(`conversation "${key}" cannot be a ${chatType}: its id is a user's`);
  return { kind: "group", chatId };
}

/**
 * The chat type a stored key implies, for what knows a conversation only by its key (a scheduled
 * run, a stored event): by Telegram's ids, positive for private chats, negative for groups; a key
 * with no chat id is the terminal's.
 */
export function chatTypeOfKey(key: string): ChatType {
  const ref = parseConversationKey(key);
  if (!ref) return "terminal";
  return ref.chatId > 0 ? "private" : "group";
}

export const scopeOfKey = (key: string): RecallScope =>
  scopeOf({ key, chatType: chatTypeOfKey(key) });

/**
 * The scope's name in storage (a folder of WORKSPACE_DIR): `private-<user id>`, `group<chat id>`
 * (the id keeps its minus: `group-1001234567` for chat -1001234567) and `terminal`. Each is a
 * plain file name, and no two scopes share one.
 */
export function scopeName(scope: RecallScope): string {
  switch (scope.kind) {
    case "private":
      return `private-${scope.userId}`;
    case "group":
      return `group${scope.chatId}`;
    case "terminal":
      return "terminal";
  }
}
