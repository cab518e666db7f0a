import { Bot, BotError, Context } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { AgentHooks } from "../agent/hooks.js";
import type { Agent } from "../agent/turn.js";
import { sendApprovalRequests } from "../answer/approval-requests.js";
import { createDelivery } from "../answer/delivery.js";
import { createLivePacer } from "../answer/live-pacer.js";
import type { ConversationVoice } from "../answer/voice-delivery.js";
import { type BotApiDeps, botApiClients } from "../bot-api/clients.js";
import type { StreamingMode } from "../config.js";
import type { Lease } from "../queue/inbox.js";
import { createRunningAnswers, type RunningAnswers } from "../queue/running-answers.js";
import type { CompactionLimits } from "../session/compaction-plan.js";
import type { PendingTopicNames } from "../session/pending-topic-names.js";
import type { SessionStore } from "../session/store.js";
import type { TaskStore } from "../tasks/store.js";
import type { UsageStore } from "../usage/usage-store.js";
import { type ApprovalsComposerDeps, approvalsComposer } from "./commands/approvals-composer.js";
import { type CommandDeps, commandsComposer } from "./commands/commands.js";
import { type MemoryCommandDeps, memoryComposer } from "./commands/memory-command.js";
import { topicNamingComposer } from "./commands/new-topics.js";
import { tasksComposer } from "./commands/tasks-command.js";
import { usageComposer } from "./commands/usage-command.js";
import { voiceComposer } from "./commands/voice-command.js";
import { conversationComposer } from "./conversation.js";
import { chatMigrationComposer, type MoveConversation } from "./inbound/chat-migration.js";
import { createFileDownloader } from "./inbound/files.js";
import type { ConversationMedia } from "./inbound/message-input.js";
import { createStopPermission } from "./stop-permission.js";
import { type TurnContext, turnContext } from "./turn-context.js";

export type BotDeps = BotApiDeps & {
  allowedUserIds: readonly number[];
  agent: Agent;
  hooks: AgentHooks;
  store: SessionStore;
  pendingTopicNames: PendingTopicNames;
  moveConversation: MoveConversation;
  tasks: TaskStore;
  compact: CommandDeps["compact"];
  settings: CompactionLimits & { model: string; timeZone: string };
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
  /** How answers show while they are written. */
  streaming?: StreamingMode;
  /** Shared with the ingest, which stops them. */
  answers?: RunningAnswers;
  /** Spoken replies and /voice; without them, answers are text only and /voice says so. */
  voice?: ConversationVoice;
  /** Tool approvals' buttons and /tools (who may answer is asked of Telegram). */
  approvals?: Omit<ApprovalsComposerDeps, "mayAnswer">;
};

/** Ends a conversation's waiting tool calls, and has the dispatcher run what that queued. */
const cancelApprovalsOf =
  ({ approvals, onQueued }: NonNullable<BotDeps["approvals"]>) =>
  async (conversation: string) => {
    if ((await approvals.cancel(conversation)).length > 0) onQueued(conversation);
  };

/**
 * The grammY bot: commands, then conversation. It runs updates the inbox hands it with their
 * lease (`run`); it never fetches updates itself (src/telegram/polling.ts and the webhook feed
 * the inbox).
 */
export function createBot(deps: BotDeps) {
  const apis = botApiClients(deps);
  const bot = new Bot<TurnContext>(deps.token, { client: apis.client, botInfo: deps.botInfo });
  apis.configure(bot.api);
  const { live: liveApi, polling: pollingApi } = apis;
  // One budget for the live updates of every answer this process writes.
  const livePacer = createLivePacer();
  const delivery = createDelivery({
    api: bot.api,
    logger: deps.logger,
    richMessages: deps.richMessages,
    courier: apis.courier,
  });
  const allowed = new Set(deps.allowedUserIds);

  // Whoever announces a migration, the conversation follows the group (nothing else runs).
  bot.use(chatMigrationComposer({ moveConversation: deps.moveConversation, logger: deps.logger }));
  // These composers answer commands and buttons only: an update that is neither passes them in
  // one check instead of one a command (docs/decisions/0011-cpu-per-turn.md). The check is the
  // first of every command()'s and callbackQuery()'s own.
  const commandsAndButtons = bot.filter(
    Context.has.filterQuery([":entities:bot_command", "callback_query:data"]),
  );
  const mayAct = createStopPermission(bot.api);
  // A press let in by its group's id (access.ts) counts only from an administrator of the group.
  commandsAndButtons.on("callback_query:data", async (ctx, next) => {
    const chat = ctx.callbackQuery.message?.chat;
    if (
      allowed.has(ctx.from.id) ||
      (chat && (await mayAct(chat, { id: ctx.from.id, kind: "user" }, undefined)))
    ) {
      return next();
    }
    await ctx.answerCallbackQuery({
      text: "Only an administrator of this group can use this button.",
      show_alert: true,
    });
  });
  commandsAndButtons.use(
    commandsComposer({
      store: deps.store,
      compact: deps.compact,
      delivery,
      settings: deps.settings,
      pendingTopicNames: deps.pendingTopicNames,
      tasks: deps.tasks,
      logger: deps.logger,
      ...(deps.approvals ? { cancelApprovals: cancelApprovalsOf(deps.approvals) } : {}),
    }),
  );
  commandsAndButtons.use(tasksComposer({ tasks: deps.tasks, delivery }));
  commandsAndButtons.use(
    usageComposer({ usage: deps.usage, delivery, timeZone: deps.settings.timeZone }),
  );
  commandsAndButtons.use(memoryComposer({ ...deps.memory, delivery }));
  if (deps.voice) {
    commandsAndButtons.use(voiceComposer({ settings: deps.voice.settings, delivery }));
  }
  const approvals = deps.approvals;
  if (approvals) {
    commandsAndButtons.use(
      approvalsComposer({
        ...approvals,
        mayAnswer: mayAct,
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
  const handlers = bot.middleware();
  /**
   * Runs an update under its inbox lease, then the answer a handler left for after the middleware
   * (TurnFlavor.answerAfter), and throws what either threw (as grammY's BotError). The context is
   * made here rather than by bot.handleUpdate, which has no room for the lease.
   */
  async function runUpdate(update: Update, lease: Lease): Promise<void> {
    let answer: (() => Promise<unknown>) | undefined;
    const ctx = turnContext(update, bot.api, bot.botInfo, lease, allowed, (run) => {
      if (answer) throw new Error("an update has one answer: answerAfter was called twice");
      answer = run;
    });
    if (!ctx) return;
    try {
      await handlers(ctx, async () => {});
      await answer?.();
    } catch (error) {
      throw new BotError(error, ctx);
    }
  }
  return { bot, runUpdate, delivery, liveApi, livePacer, pollingApi };
}
