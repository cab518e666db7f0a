import type { Message } from "grammy/types";
import { type ConversationRef, conversationKey } from "../scope/conversation-key.js";

/**
 * The topic a message was written in (of a forum or of a private chat with topics), for the
 * answer to go to the same topic. A reply thread of an ordinary supergroup has a
 * `message_thread_id` too, but is no topic.
 */
export function threadOfMessage(
  message: Pick<Message, "is_topic_message" | "message_thread_id"> | undefined,
): number | undefined {
  return message?.is_topic_message ? message.message_thread_id : undefined;
}

/** The conversation a message belongs to: its chat, and its topic where it has one. */
export function conversationOf(
  message: Pick<Message, "chat" | "is_topic_message" | "message_thread_id">,
): ConversationRef {
  return { chatId: message.chat.id, threadId: threadOfMessage(message) };
}

export function conversationKeyOf(
  message: Pick<Message, "chat" | "is_topic_message" | "message_thread_id">,
): string {
  return conversationKey(conversationOf(message));
}
