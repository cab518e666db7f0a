import type { Context } from "grammy";
import type { Message } from "grammy/types";

/** The forum topic a message was written in, for the answer to go to the same topic. */
export function threadOfMessage(message: Message | undefined): number | undefined {
  return message?.is_topic_message ? message.message_thread_id : undefined;
}

export function threadOf(ctx: Context): number | undefined {
  return threadOfMessage(ctx.msg);
}
