import { type Bot, BotError } from "grammy";
import type { Message, Update } from "grammy/types";
import { type BotDeps, createBot } from "../../src/telegram/bot.js";
import { createPendingTopicNames } from "../../src/telegram/new-topics.js";
import type { FakeTelegram } from "../fakes/telegram.js";
import type { Harness } from "./harness.js";

/** The real bot on a harness's app and a fake Telegram; `deps` replaces what a test needs to. */
export function botOnHarness(
  h: Harness,
  telegram: FakeTelegram,
  deps: Pick<BotDeps, "allowedUserIds" | "settings"> & Partial<BotDeps>,
) {
  return createBot({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    agent: h.app.agent,
    hooks: h.app.hooks,
    store: h.app.store,
    pendingTopicNames: createPendingTopicNames({ db: h.app.database.db }),
    usage: h.app.usage,
    memory: { profiles: h.app.profiles, forgetting: h.app.forgetting },
    moveConversation: async () => ({
      events: 0,
      memoryFiles: 0,
      tasks: 0,
      workspaceFiles: 0,
      profileEntries: 0,
    }),
    tasks: h.app.tasks,
    compact: (chatId, guard) => h.app.compactor.compact(chatId, { guard }),
    logger: h.app.logger,
    botInfo: telegram.bot,
    media: {
      save: h.app.attachments.save,
      read: h.app.attachments.read,
      maxBytes: 20 * 1024 * 1024,
      workspaces: h.app.workspaces,
    },
    ...deps,
  });
}

/**
 * Runs a message from `user` in their private chat `chat` through the bot, as the inbox hands it
 * an update, and throws what the handler threw (not grammY's wrapper).
 */
export async function runPrivateMessage(
  bot: Bot,
  ids: { update: number; chat: number; user: number },
  content: Partial<Message>,
): Promise<void> {
  const update = {
    update_id: ids.update,
    message: {
      message_id: ids.update,
      date: Math.floor(Date.now() / 1000),
      chat: { id: ids.chat, type: "private", first_name: "T" },
      from: { id: ids.user, is_bot: false, first_name: "T" },
      ...content,
    },
  } as Update;
  await bot.handleUpdate(update).catch((error: unknown) => {
    throw error instanceof BotError ? error.error : error;
  });
}

/** The update Telegram sends when `userId` presses an inline button of `message`. */
export function buttonPress(
  updateId: number,
  userId: number,
  message: Message,
  data: string,
): Update {
  return {
    update_id: updateId,
    callback_query: {
      id: `q${updateId}`,
      from: { id: userId, is_bot: false, first_name: "Test User" },
      message,
      chat_instance: "ci",
      data,
    },
  };
}
