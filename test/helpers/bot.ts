import { type Api, BotError } from "grammy";
import type { Message, Update } from "grammy/types";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { Lease } from "../../src/queue/inbox.js";
import { createPendingTopicNames } from "../../src/session/pending-topic-names.js";
import { type BotDeps, createBot } from "../../src/telegram/bot.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import type { DatabaseKindName } from "./databases.js";
import { CHAT_MODEL, type Harness, startHarness } from "./harness.js";
import { heldLease } from "./lease.js";
import { moveNothing } from "./move-nothing.js";

/**
 * The bot as a test drives it: `run` runs an update as the inbox hands it one, under `lease`
 * (by default one that is always held, see heldLease).
 */
export type TestBot = { api: Api; run(update: Update, lease?: Lease): Promise<void> };

/** The real bot on a harness's app and a fake Telegram; `deps` replaces what a test needs to. */
export function botOnHarness(
  h: Harness,
  telegram: FakeTelegram,
  deps: Pick<BotDeps, "allowedUserIds" | "settings"> & Partial<BotDeps>,
): { bot: TestBot; pollingApi: Api } {
  const created = createBot({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    agent: h.app.agent,
    hooks: h.app.hooks,
    store: h.app.store,
    pendingTopicNames: createPendingTopicNames({ db: h.app.database.db }),
    usage: h.app.usage,
    memory: { profiles: h.app.profiles, forgetting: h.app.forgetting },
    moveConversation: moveNothing,
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
  return {
    bot: {
      api: created.bot.api,
      run: (update, lease = heldLease(update)) => created.runUpdate(update, lease),
    },
    pollingApi: created.pollingApi,
  };
}

/**
 * Runs a message from `user` in their private chat `chat` through the bot, as the inbox hands it
 * an update (under `lease`, by default one always held), and throws what the handler threw (not
 * grammY's wrapper).
 */
export async function runPrivateMessage(
  bot: TestBot,
  ids: { update: number; chat: number; user: number },
  content: Partial<Message>,
  lease?: Lease,
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
  await bot.run(update, lease).catch((error: unknown) => {
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

/** A harness, a fake Telegram and the real bot on them (see botPerFile). */
export type BotWorld = {
  readonly h: Harness;
  readonly telegram: FakeTelegram;
  /** The bot with the block's own deps. */
  readonly bot: TestBot;
  /** Another bot on the same fake Telegram and on `h` (by default the block's), with `deps`. */
  botWith(deps?: Partial<BotDeps>, h?: Harness): TestBot;
};

/**
 * The harness, a fake Telegram and the real bot on them for the tests of the calling describe
 * block, answering `user` with compaction off: started before its first test, closed after its
 * last; each test also checks that the fake Gemini refused nothing the app sent.
 */
export function botPerFile(options: {
  kind: DatabaseKindName;
  user: number;
  harness?: Omit<NonNullable<Parameters<typeof startHarness>[0]>, "kind">;
  /** What the block's bot has besides the defaults (e.g. its media limits). */
  deps?: (h: Harness) => Partial<BotDeps>;
}): BotWorld {
  let started: { h: Harness; telegram: FakeTelegram; bot: TestBot } | undefined;
  const world = () => {
    if (!started) throw new Error("botPerFile: used outside the tests of its describe block");
    return started;
  };
  const withDefaults = (h: Harness, telegram: FakeTelegram, deps: Partial<BotDeps>) =>
    botOnHarness(h, telegram, {
      allowedUserIds: [options.user],
      settings: { model: CHAT_MODEL, maxEvents: 0, maxTokens: 0, timeZone: "UTC" },
      ...deps,
    }).bot;
  const botWith = (deps: Partial<BotDeps> = {}, h = world().h) =>
    withDefaults(h, world().telegram, deps);
  beforeAll(async () => {
    const h = await startHarness({ ...options.harness, kind: options.kind });
    const telegram = await startFakeTelegram();
    started = { h, telegram, bot: withDefaults(h, telegram, options.deps?.(h) ?? {}) };
  });
  afterEach(() => {
    expect(world().h.fake.rejections).toEqual([]);
  });
  afterAll(async () => {
    await started?.telegram.close();
    await started?.h.close();
  });
  return {
    get h() {
      return world().h;
    },
    get telegram() {
      return world().telegram;
    },
    get bot() {
      return world().bot;
    },
    botWith,
  };
}
