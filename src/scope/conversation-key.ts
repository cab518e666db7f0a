/**
 * Which conversation a message belongs to. A topic of a forum supergroup, or of a private chat
 * with topics (Bot API 9.4+), is a conversation of its own: Telegram marks its messages with
 * `is_topic_message` and the topic's `message_thread_id`. Everything else (a chat without
 * topics, a forum's General topic, a reply thread of an ordinary supergroup) is the chat's.
 *
 * The key, `<chat_id>` or `<chat_id>:<thread_id>`, is what the session store, the memory files,
 * the inbox and the tools call `chatId`: history stored before topics were told apart stays
 * under `<chat_id>`, the key of the chat (and of its General topic).
 */
export type ConversationRef = { chatId: number; threadId: number | undefined };

export function conversationKey(ref: ConversationRef): string {
  return ref.threadId === undefined ? String(ref.chatId) : `${ref.chatId}:${ref.threadId}`;
}

/** The chat and topic of a key; undefined for a key no Telegram chat has (the terminal's). */
export function parseConversationKey(key: string): ConversationRef | undefined {
  const match = /^(-?\d+)(?::(\d+))?$/.exec(key);
  if (!match) return undefined;
  return {
    chatId: Number(match[1]),
    threadId: match[2] === undefined ? undefined : Number(match[2]),
  };
}
