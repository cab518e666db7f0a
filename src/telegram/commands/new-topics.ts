import { Composer, type Context, GrammyError } from "grammy";
import type { Logger } from "../../logger.js";
import { truncate } from "../../session/event-text.js";
import type { PendingTopicNames } from "../../session/pending-topic-names.js";
import type { TurnContext } from "../turn-context.js";

/** What a topic /new opens is called until its first message names it. */
export const NEW_TOPIC_NAME = "New conversation";
const TOPIC_NAME_MAX_CHARS = 64;

/** A topic's name from the message that starts it: one line, short enough for Telegram (128). */
export function topicNameFrom(text: string): string {
  return truncate(text.replace(/\s+/g, " ").trim(), TOPIC_NAME_MAX_CHARS);
}

/** Where the bot may open topics: a private chat in threaded mode, or a forum. */
function chatHasTopics(ctx: Context): boolean {
  if (ctx.chat?.type === "private") return ctx.me.has_topics_enabled === true;
  return ctx.chat?.type === "supergroup" && ctx.chat.is_forum === true;
}

/**
 * Opens a topic for a fresh conversation and returns its thread id; undefined where the chat has
 * no topics, or the bot may not create them there (not an administrator with can_manage_topics).
 */
export async function openTopic(ctx: Context, logger: Logger): Promise<number | undefined> {
  if (!ctx.chat || !chatHasTopics(ctx)) return undefined;
  try {
    const topic = await ctx.api.createForumTopic(ctx.chat.id, NEW_TOPIC_NAME);
    return topic.message_thread_id;
  } catch (error) {
    if (!(error instanceof GrammyError)) throw error;
    logger.info(
      { chat_id: ctx.chat.id, err: error.description },
      "could not open a topic for /new; clearing the conversation instead",
    );
    return undefined;
  }
}

/**
 * Names a topic /new opened after the first message written in it (commands do not count), and
 * lets every message go on to the rest of the bot. Renaming is a courtesy: a failure is logged.
 */
export function topicNamingComposer(deps: {
  pending: PendingTopicNames;
  logger: Logger;
}): Composer<TurnContext> {
  const composer = new Composer<TurnContext>();
  composer.on("message:text", async (ctx, next) => {
    const threadId = ctx.thread;
    const isCommand = ctx.msg.entities?.some((e) => e.type === "bot_command" && e.offset === 0);
    if (threadId !== undefined && !isCommand && (await deps.pending.take(ctx.conversation))) {
      const name = topicNameFrom(
        ctx.msg.text.replace(new RegExp(`@${ctx.me.username}\\b`, "gi"), ""),
      );
      await ctx.api
        .editForumTopic(ctx.chat.id, threadId, { name: name || NEW_TOPIC_NAME })
        .catch((error: unknown) =>
          deps.logger.warn({ err: error, chat_id: ctx.chat.id }, "could not name the new topic"),
        );
    }
    await next();
  });
  return composer;
}
