import { putAttachment } from "../../src/session/attachments.js";
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
    moveConversation: async () => ({ events: 0, memoryFiles: 0, tasks: 0 }),
    tasks: h.app.tasks,
    compact: (chatId, guard) => h.app.compactor.compact(chatId, { guard }),
    logger: h.app.logger,
    botInfo: telegram.bot,
    media: {
      save: (conversation, file) => putAttachment(h.app.database.db, conversation, file),
      maxBytes: 20 * 1024 * 1024,
      workspaceDir: h.dirs.workspace,
    },
    ...deps,
  });
}
