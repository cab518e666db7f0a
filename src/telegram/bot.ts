import { autoRetry } from "@grammyjs/auto-retry";
import { Api, type ApiClientOptions, Bot, Context, HttpError } from "grammy";
import type { UserFromGetMe } from "grammy/types";
import type { AgentHooks } from "../agent/hooks.js";
import type { Agent } from "../agent/turn.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import type { Lease } from "../queue/inbox.js";
import type { CompactionLimits } from "../session/compaction-plan.js";
import type { SessionStore } from "../session/store.js";
import type { TaskStore } from "../tasks/store.js";
import type { UsageStore } from "../usage/usage-store.js";
import { senderOf } from "./access.js";
import {
  type ApprovalsComposerDeps,
  approvalsComposer,
  sendApprovalRequests,
} from "./approvals-composer.js";
import { chatMigrationComposer, type MoveConversation } from "./chat-migration.js";
import { type CommandDeps, commandsComposer } from "./commands.js";
import {
  type ConversationMedia,
  type ConversationVoice,
  conversationComposer,
} from "./conversation.js";
import type { Courier } from "./courier.js";
import { createDelivery } from "./delivery.js";
import { createFileDownloader } from "./files.js";
import { grammyFetch } from "./grammy-fetch.js";
import { createLivePacer } from "./live-answer.js";
import { type MemoryCommandDeps, memoryComposer } from "./memory-command.js";
import { logNetworkFailures } from "./network-failures.js";
import { type PendingTopicNames, topicNamingComposer } from "./new-topics.js";
import { createRunningAnswers, type RunningAnswers } from "./running-answers.js";
import { scrubOutgoing } from "./scrub-outgoing.js";
import { createStopPermission } from "./stop-permission.js";
import { tasksComposer } from "./tasks-command.js";

import { usageComposer } from "./usage-command.js";
import { voiceComposer } from "./voice-command.js";
export type BotDeps = {
  token: string;
  apiRoot: string;
  allowedUserIds: readonly number[];
  agent: Agent;
  hooks: AgentHooks;
  store: SessionStore;
  pendingTopicNames: PendingTopicNames;
  moveConversation: MoveConversation;
  tasks: TaskStore;
  compact: CommandDeps["compact"];
  logger: Logger;
  settings: CompactionLimits & { model: string };
  /** The inbox lease of an update being run (see ConversationDeps). */
  leaseOf?(updateId: number): Lease | undefined;
  /** Taken out of everything sent to Telegram (see scrub-outgoing.ts). */
  secrets?: readonly string[];
  /** Where files users send go, and how large they may be (see ConversationMedia). */
  media: Omit<ConversationMedia, "download">;
  /** Answers as rich messages (RICH_MESSAGES); otherwise HTML messages. */
  richMessages?: boolean;
  /** Known bot identity (tests); otherwise `bot.init()` asks Telegram with getMe. */
  botInfo?: UserFromGetMe;
  /** Tokens per conversation, for /usage. */
  usage: UsageStore;
  /** The profiles and forgetting, for /memory and /forget. */
  memory: Pick<MemoryCommandDeps, "profiles" | "forgetting">;
  /** Told of every failed attempt of an API call: Telegram's error code, or "network". */
  onApiError?: (method: string, code: string) => void;
  /** How answers show while they are written. */
  streaming?: StreamingMode;
  /** Shared with the ingest, which stops them. */
  answers?: RunningAnswers;
  /** Sends the messages and files of answers and records them off the main thread (courier.ts). */
  courier?: Courier;
  /** Spoken replies and /voice; without them, answers are text only and /voice says so. */
  voice?: ConversationVoice;
  /** Tool approvals' buttons and /tools (who may answer is asked of Telegram). */
  approvals?: Omit<ApprovalsComposerDeps, "mayAnswer" | "leaseOf">;
};

// 429s wait Telegram's retry_after, but not for long: a stalled send holds up its chat's inbox.
const MAX_RETRY_DELAY_SECONDS = 30;
const MAX_RETRY_ATTEMPTS = 3;

/**
 * The grammY bot: commands, then conversation. It handles updates the inbox hands it; it never
 * fetches updates itself (src/telegram/polling.ts and the webhook feed the inbox).
 */
export function createBot(deps: BotDeps) {
  const client: ApiClientOptions = {
    apiRoot: deps.apiRoot,
    fetch: grammyFetch,
  };
  const bot = new Bot(deps.token, { client, botInfo: deps.botInfo });
  bot.api.config.use(scrubOutgoing(deps.secrets ?? []));
  // Drafts while an answer is written go without auto-retry: one retried after a wait would be
  // stale, and the next one replaces it anyway.
  const liveApi = new Api(deps.token, client);
  // One budget for the live updates of every answer this process writes.
  const livePacer = createLivePacer();
  liveApi.config.use(scrubOutgoing(deps.secrets ?? []));
  liveApi.config.use(logNetworkFailures(deps.logger, deps.apiRoot));
  bot.api.config.use(logNetworkFailures(deps.logger, deps.apiRoot));
  // Before auto-retry, like the log, so that every failed attempt is counted.
  const onApiError = deps.onApiError;
  if (onApiError) {
    bot.api.config.use(async (prev, method, payload, signal) => {
      try {
        const result = await prev(method, payload, signal);
        if (!result.ok) onApiError(method, String(result.error_code));
        return result;
      } catch (error) {
        if (error instanceof HttpError && !signal?.aborted) onApiError(method, "network");
        throw error;
      }
    });
  }
  bot.api.config.use(
    autoRetry({ maxDelaySeconds: MAX_RETRY_DELAY_SECONDS, maxRetryAttempts: MAX_RETRY_ATTEMPTS }),
  );
  const delivery = createDelivery({
    api: bot.api,
    logger: deps.logger,
    richMessages: deps.richMessages,
    courier: deps.courier,
  });
  const allowed = new Set(deps.allowedUserIds);

  // Whoever announces a migration, the conversation follows the group (nothing else runs).
  bot.use(chatMigrationComposer({ moveConversation: deps.moveConversation, logger: deps.logger }));
  // The inbox only admits allowed senders; checking again here keeps the bot safe on its own.
  bot.use((ctx, next) => {
    // A button's message is the bot's own; who pressed it is the query's sender.
    const sender = ctx.callbackQuery ? ctx.callbackQuery.from : ctx.msg && senderOf(ctx.msg);
    return sender && allowed.has(sender.id) ? next() : undefined;
  });
  // These composers answer commands and buttons only: an update that is neither passes them in
  // one check instead of one a command, each of which grammY keeps waiting on the turn's answer
  // (docs/decisions/0011-cpu-per-turn.md). The check is the first of every command()'s and
  // callbackQuery()'s own.
  const commandsAndButtons = bot.filter(
    Context.has.filterQuery([":entities:bot_command", "callback_query:data"]),
  );
  commandsAndButtons.use(
    commandsComposer({
      store: deps.store,
      compact: deps.compact,
      delivery,
      settings: deps.settings,
      leaseOf: deps.leaseOf,
      pendingTopicNames: deps.pendingTopicNames,
      tasks: deps.tasks,
      logger: deps.logger,
    }),
  );
  commandsAndButtons.use(tasksComposer({ tasks: deps.tasks, delivery, leaseOf: deps.leaseOf }));
  commandsAndButtons.use(usageComposer({ usage: deps.usage, delivery }));
  commandsAndButtons.use(memoryComposer({ ...deps.memory, delivery, leaseOf: deps.leaseOf }));
  if (deps.voice) {
    commandsAndButtons.use(voiceComposer({ settings: deps.voice.settings, delivery }));
  }
  const approvals = deps.approvals;
  if (approvals) {
    commandsAndButtons.use(
      approvalsComposer({
        ...approvals,
        mayAnswer: createStopPermission(bot.api),
        leaseOf: deps.leaseOf,
      }),
    );
  }
  bot.use(topicNamingComposer({ pending: deps.pendingTopicNames, logger: deps.logger }));
  bot.use(
    conversationComposer({
      agent: deps.agent,
      hooks: deps.hooks,
      delivery,
      logger: deps.logger,
      leaseOf: deps.leaseOf,
      liveApi,
      livePacer,
      streaming: deps.streaming ?? "auto",
      answers: deps.answers ?? createRunningAnswers(),
      ...(deps.voice ? { voice: deps.voice } : {}),
      ...(approvals
        ? {
            sendRequests: (pending) => sendApprovalRequests(bot.api, approvals.approvals, pending),
          }
        : {}),
      media: {
        ...deps.media,
        download: createFileDownloader({
          api: bot.api,
          apiRoot: deps.apiRoot,
          maxBytes: deps.media.maxBytes,
        }),
      },
    }),
  );
  return { bot, delivery, liveApi, livePacer };
}
