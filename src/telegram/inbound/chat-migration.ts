import { Composer, type Context } from "grammy";
import type { Logger } from "../../logger.js";
import { conversationKey } from "../../scope/conversation-key.js";

export type MoveConversation = (
  from: string,
  to: string,
) => Promise<{
  events: number;
  memoryFiles: number;
  tasks: number;
  workspaceFiles: number;
  profileEntries: number;
  voiceSettings: number;
  usageRows: number;
  toolGrants: number;
}>;

/**
 * A group that becomes a supergroup gets a new chat id; its conversation follows it. Telegram
 * says so twice, in the old group (migrate_to_chat_id) and in the new supergroup
 * (migrate_from_chat_id); whichever runs first moves everything, the other finds nothing left.
 * A basic group has no topics, so both conversations are the chats' own.
 */
export function chatMigrationComposer(deps: {
  moveConversation: MoveConversation;
  logger: Logger;
}): Composer<Context> {
  const composer = new Composer<Context>();
  const move = async (fromChat: number, toChat: number) => {
    const from = conversationKey({ chatId: fromChat, threadId: undefined });
    const to = conversationKey({ chatId: toChat, threadId: undefined });
    const moved = await deps.moveConversation(from, to);
    deps.logger.info({ from, to, ...moved }, "a group became a supergroup; its conversation moved");
  };
  composer.on("message:migrate_to_chat_id", (ctx) => move(ctx.chat.id, ctx.msg.migrate_to_chat_id));
  composer.on("message:migrate_from_chat_id", (ctx) =>
    move(ctx.msg.migrate_from_chat_id, ctx.chat.id),
  );
  return composer;
}
