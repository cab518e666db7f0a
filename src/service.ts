import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { type Bot, BotError, GrammyError } from "grammy";
import type { Update } from "grammy/types";
import { createContinuationRunner } from "./answer/approval-run.js";
import { startCourier } from "./answer/courier.js";
import {
  createScheduledRunner,
  logTaskNotAllowed,
  NOT_ALLOWED_REASON,
} from "./answer/scheduled-run.js";
import type { App } from "./app.js";
import { continuationOf } from "./approvals/continuation.js";
import { startApprovalExpiry } from "./approvals/expiry.js";
import { configuredSecrets, type DatabaseTarget } from "./config.js";
import { readPostgresTime, startDatabaseClock } from "./db/clock.js";
import { lockSqliteService, ServiceLockError } from "./db/service-lock.js";
import { listen } from "./http/listener.js";
import { createReadiness } from "./http/readiness.js";
import { createHttpServer } from "./http/server.js";
import { Components } from "./lifecycle/components.js";
import { createScrubber, type Logger } from "./logger.js";
import { Dispatcher } from "./queue/dispatcher.js";
import { ALBUM_SETTLE_MS, createInbox } from "./queue/inbox.js";
import { startInboxPruner } from "./queue/inbox-pruner.js";
import { listenForStops, replicaStopper } from "./queue/replica-stops.js";
import { createRunningAnswers } from "./queue/running-answers.js";
import { scopeKeyOf } from "./recall/area.js";
import { followMovedConversation } from "./recall/meaning.js";
import { scopeName, scopeOfKey } from "./scope/recall-scope.js";
import { moveMemory } from "./session/memory-files.js";
import { createPendingTopicNames } from "./session/pending-topic-names.js";
import { StartupError } from "./startup-error.js";
import { startScheduler } from "./tasks/scheduler.js";
import { scheduledRunOf } from "./tasks/store.js";
import { createBot } from "./telegram/bot.js";
import { COMMANDS } from "./telegram/commands/command-list.js";
import { tellGaveUp } from "./telegram/conversation.js";
import { createIngest, type Ingest } from "./telegram/ingest.js";
import { startPolling } from "./telegram/polling.js";
import { askerOfUpdate, createStopPermission } from "./telegram/stop-permission.js";
import { checkVoiceAtStart } from "./voice/voices.js";

const SHUTDOWN_WAIT_MS = 25_000;
// Long enough for a service that is shutting down on the same SQLite file to finish.
const LOCK_WAIT_MS = SHUTDOWN_WAIT_MS + 5_000;
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const CLOCK_RESYNC_MS = 60 * 1000;
// Due tasks are looked for this often: reminders are set to the minute.
const SCHEDULER_INTERVAL_MS = 5_000;
// Unanswered approvals are looked for this often: a minute's APPROVAL_TIMEOUT ends within seconds.
const APPROVAL_EXPIRY_INTERVAL_MS = 2_000;
// stopped_message_generation: the stop button of a draft; callback_query: the cancel buttons of
// /tasks.
const ALLOWED_UPDATES = ["message", "stopped_message_generation", "callback_query"] as const;

// grammY types its signals after the abort-controller polyfill; a standard one works the same.
const apiSignal = (signal: AbortSignal) => signal as Parameters<Bot["init"]>[0];

export type Service = {
  /** The HTTP listener's address (PORT=0 picks a free port). */
  address: AddressInfo;
  mode: "webhook" | "polling";
  /** Stops taking updates, lets running turns finish (bounded), closes the listener. */
  stop(): Promise<void>;
};

/** Start-up failures the operator can act on, said so; anything else as it is. */
function explainStartupFailure(error: unknown): unknown {
  if (error instanceof ServiceLockError) return new StartupError(error.message);
  if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
    return new StartupError(
      `Telegram rejected TELEGRAM_BOT_TOKEN (${error.error_code} ${error.description}): copy the token from @BotFather again.`,
    );
  }
  if (error instanceof GrammyError) {
    return new StartupError(
      `Telegram refused ${error.method} at start-up (${error.error_code} ${error.description}): fix what it names${error.method === "setWebhook" ? " (WEBHOOK_URL must be a public HTTPS address that reaches this server's /telegram/webhook)" : ""} and start again.`,
    );
  }
  return error;
}

export type StartOptions = {
  /** Aborted by a stop request: start-up ends at its current step (see main.ts). */
  signal?: AbortSignal;
};

/** The database the courier's thread records to: the service's own, unless it lives in memory. */
function courierDatabaseOf(target: DatabaseTarget): DatabaseTarget | undefined {
  if (target.kind === "postgres") return target;
  return target.path === ":memory:" ? undefined : target;
}

export async function startService(
  app: App,
  logger: Logger,
  options: StartOptions = {},
): Promise<Service> {
  const { config } = app;
  const { signal } = options;
  const token = config.telegramBotToken;
  if (!token) throw new StartupError("TELEGRAM_BOT_TOKEN is not set.");
  const components = new Components({
    signal,
    onStopFailure: (component, error) =>
      logger.error({ err: error, component }, "a part of the service failed to stop"),
  });
  // /healthz says 503 until the last component is up, so that nothing routes updates here before
  // they are taken.
  const readiness = createReadiness({ logger });
  // The listener answers from the first step on; the webhook takes updates once the ingest exists.
  let ingest: Ingest | undefined;
  // Turns still running at the end may yet send their answers: the courier and the lock then go
  // only with the process, so that a service waiting for the lock cannot run them a second time
  // meanwhile.
  let drained = true;
  const mode = config.webhook ? "webhook" : "polling";
  try {
    const listener = await components.start({
      name: "HTTP listener",
      start: () =>
        listen(
          createHttpServer({
            health: () => readiness.check(),
            logger,
            metrics: {
              token: config.metricsToken,
              contentType: app.metrics.contentType,
              render: app.metrics.render,
            },
            webhook: config.webhook
              ? {
                  secret: config.webhook.secret,
                  ingest: (update) =>
                    ingest ? ingest(update) : Promise.reject(new Error("still starting up")),
                }
              : undefined,
          }),
          config.host,
          config.port,
        ),
      stop: (listener) => listener.close(),
    });
    // Taken once listening, so that a busy port is said at once rather than after the wait.
    const database = config.database;
    if (database.kind === "sqlite" && database.path !== ":memory:") {
      await components.start({
        name: "SQLite lock",
        start: (signal) =>
          lockSqliteService(database.path, { waitMs: LOCK_WAIT_MS, logger, signal }),
        stop: (lock) => {
          if (drained) lock.release();
        },
      });
    }
    const courierDatabase = courierDatabaseOf(config.database);
    const courier =
      courierDatabase &&
      (await components.start({
        name: "courier",
        start: () =>
          startCourier({
            token,
            apiRoot: config.telegramApiRoot,
            database: courierDatabase,
            logger,
          }),
        stop: (courier) => (drained ? courier.stop() : undefined),
      }));
    // Stopped before the courier: voice notes still being encoded are sent through it.
    await components.start({
      name: "voice encoder",
      start: () => app.voice.encoder,
      stop: (encoder) => (drained ? encoder.stop() : undefined),
    });
    // Answers being written, for the ingest to stop without waiting behind them in the inbox.
    const answers = createRunningAnswers();
    const { bot, runUpdate, delivery, liveApi, livePacer, pollingApi } = await components.start({
      name: "Telegram bot",
      start: async (signal) => {
        const made = createBot({
          token,
          apiRoot: config.telegramApiRoot,
          allowedUserIds: config.allowedUserIds,
          agent: app.agent,
          hooks: app.hooks,
          store: app.store,
          pendingTopicNames: createPendingTopicNames({ db: app.database.db }),
          moveConversation: async (from, to) => ({
            events: await app.store.move(from, to).then(async (moved) => {
              await followMovedConversation(app.database.db, to);
              return moved;
            }),
            memoryFiles: await moveMemory(config.memoryDir, from, to),
            // A basic group has no topics: the new key is the supergroup's chat id.
            tasks: await app.tasks.move(from, { conversation: to, chatId: Number(to) }),
            workspaceFiles: await app.workspaces.move(scopeOfKey(from), scopeOfKey(to)),
            profileEntries: await app.profiles.moveScope(scopeKeyOf(from), scopeKeyOf(to)),
            voiceSettings: await app.voice.settings.move(from, to),
            usageRows: await app.usage.move(from, to),
            toolGrants: await app.approvals.store.moveGrants(
              scopeName(scopeOfKey(from)),
              scopeName(scopeOfKey(to)),
            ),
          }),
          tasks: app.tasks,
          compact: (chatId, guard) => app.compactor.compact(chatId, { guard }),
          logger,
          settings: {
            model: config.geminiModel,
            maxEvents: config.compactionMaxEvents,
            maxTokens: config.compactionMaxTokens,
            timeZone: config.timeZone,
          },
          secrets: configuredSecrets(config),
          onApiError: (method, code) => app.metrics.telegramError(method, code),
          streaming: config.streaming,
          answers,
          media: {
            save: app.attachments.save,
            read: app.attachments.read,
            maxBytes: config.mediaMaxBytes,
            workspaces: app.workspaces,
            transcribe: (conversation, heard) => app.transcriber.afterTurn(conversation, heard),
          },
          usage: app.usage,
          memory: { profiles: app.profiles, forgetting: app.forgetting },
          richMessages: config.richMessages,
          courier,
          voice: app.voice,
          approvals: {
            approvals: app.approvals,
            servers: async () => (await app.mcp?.servers()) ?? [],
            // Called only once the service runs, when the dispatcher below exists.
            onQueued: (conversation) => dispatcher.announce(conversation),
          },
        });
        await made.bot.init(apiSignal(signal));
        await made.bot.api.setMyCommands(
          COMMANDS.map((c) => ({ ...c })),
          undefined,
          apiSignal(signal),
        );
        return made;
      },
    });
    await components.start({
      name: "voice check",
      start: () =>
        checkVoiceAtStart({
          apiKey: config.geminiApiKey,
          baseUrl: config.geminiBaseUrl,
          voice: config.geminiVoice,
          logger,
        }),
    });
    // Replicas on PostgreSQL time leases by the server's clock; SQLite's processes share one host's.
    const clock =
      app.database.kind === "postgres"
        ? await components.start({
            name: "database clock",
            start: () =>
              startDatabaseClock({
                readServerTime: () => readPostgresTime(app.database.db),
                logger,
                resyncMs: CLOCK_RESYNC_MS,
              }),
            stop: (clock) => clock.stop(),
          })
        : undefined;
    // Started by createApp; they stop once no turn runs any more.
    const { mcp } = app;
    if (mcp)
      await components.start({ name: "MCP servers", start: () => mcp, stop: () => mcp.close() });
    await components.start({
      name: "usage records",
      start: () => app.usageRecorder,
      stop: (recorder) => recorder.flush(),
    });
    const workerId = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
    const inbox = await components.start({
      name: "inbox",
      start: async () => {
        const inbox = createInbox({
          db: app.database.db,
          kind: app.database.kind,
          workerId,
          leaseMs: config.inboxLeaseSeconds * 1000,
          now: clock?.now,
          onStopRequested: (updateId) => answers.stopUpdate(updateId),
          scrub: createScrubber(configuredSecrets(config)),
        });
        app.metrics.watchInbox(() => inbox.backlog());
        const recovered = await inbox.recoverAfterCrash();
        if (recovered > 0)
          logger.warn({ updates: recovered }, "running again updates interrupted by a restart");
        // Tasks whose creator has left ALLOWED_USER_IDS must not run in their name.
        const orphaned = await app.tasks.disableNotAllowed(
          config.allowedUserIds,
          NOT_ALLOWED_REASON,
        );
        for (const task of orphaned) logTaskNotAllowed(logger, task);
        return inbox;
      },
    });
    // Replicas share a PostgreSQL database: a stop may reach one that is not writing the answer.
    const replicas = config.database.kind === "postgres" ? config.database : undefined;
    const answering = await components.start({
      name: "dispatcher and ingest",
      start: () => {
        const continuations = createContinuationRunner({
          agent: app.agent,
          approvals: app.approvals,
          api: bot.api,
          delivery,
          readAttachments: app.attachments.read,
          live: { api: liveApi, mode: config.streaming, pacer: livePacer },
          answers,
          logger,
          voice: app.voice,
          store: app.store,
        });
        const scheduled = createScheduledRunner({
          allowedUserIds: config.allowedUserIds,
          tasks: app.tasks,
          agent: app.agent,
          delivery,
          readAttachments: app.attachments.read,
          live: { api: liveApi, mode: config.streaming, pacer: livePacer },
          answers,
          logger,
          now: clock?.now,
          sendRequests: (pending) => continuations.sendRequests(pending),
          voice: app.voice,
        });
        const dispatcher = new Dispatcher({
          inbox,
          handle: async (item, lease) => {
            const continuation = continuationOf(item.update);
            if (continuation) return continuations.run(item, lease, continuation);
            const run = scheduledRunOf(item.update);
            if (run) return scheduled.run(item, lease, run);
            await runUpdate(item.update as Update, lease);
          },
          logger,
          concurrency: config.maxConcurrentTurns,
          pollMs: 1_000,
          // Three renewals per lease: one may fail or come late without the lease running out.
          renewMs: (config.inboxLeaseSeconds * 1000) / 3,
          maxAttempts: 5,
          retryDelay: (error) => {
            const cause = error instanceof BotError ? error.error : error;
            const seconds = cause instanceof GrammyError ? cause.parameters.retry_after : undefined;
            return seconds === undefined ? undefined : seconds * 1000;
          },
          onGiveUp: (item) => {
            const run = scheduledRunOf(item.update);
            return run ? scheduled.tellGaveUp(run) : tellGaveUp(delivery, item);
          },
        });
        const ingest = createIngest({
          inbox,
          delivery,
          allowedUserIds: config.allowedUserIds,
          bot: { id: bot.botInfo.id, username: bot.botInfo.username },
          logger,
          onStored: ({ album, conversation }) => {
            dispatcher.announce(conversation);
            // Timers round to the millisecond: a little past the settle time, the album is quiet.
            if (album) dispatcher.announceAfter(ALBUM_SETTLE_MS + 20, conversation);
          },
          answers,
          mayStop: createStopPermission(bot.api),
          cancelWaiting: async (conversation, may) => {
            const [waiting] = await app.approvals.store.pendingIn(conversation);
            if (!waiting) return false;
            if (!(await may(waiting.askedBy))) return "refused";
            const cancelled = await app.approvals.cancel(conversation);
            if (cancelled.length > 0) dispatcher.announce(conversation);
            return cancelled.length > 0;
          },
          stopElsewhere:
            replicas &&
            replicaStopper({
              db: app.database.db,
              inbox,
              askerOf: (update) => askerOfUpdate(update, app.tasks),
              logger,
            }),
        });
        return { dispatcher, ingest };
      },
    });
    const { dispatcher } = answering;
    ingest = answering.ingest;
    const { webhook } = config;
    await components.start({
      name: "webhook",
      start: (signal) =>
        webhook
          ? bot.api.setWebhook(
              webhook.url,
              { secret_token: webhook.secret, allowed_updates: [...ALLOWED_UPDATES] },
              apiSignal(signal),
            )
          : // Telegram hands out updates by getUpdates only while no webhook is set.
            bot.api.deleteWebhook(undefined, apiSignal(signal)),
    });
    if (replicas) {
      await components.start({
        name: "replica stops",
        start: () =>
          listenForStops({
            connectionString: replicas.connectionString,
            workerId,
            stopUpdate: (updateId) => answers.stopUpdate(updateId),
            logger,
          }),
        stop: (listener) => listener.close(),
      });
    }
    await components.start({
      name: "inbox pruner",
      start: () =>
        startInboxPruner({
          inbox,
          retentionMs: config.inboxRetentionDays * 24 * 60 * 60 * 1000,
          intervalMs: PRUNE_INTERVAL_MS,
          logger,
          // The inbox stamps finished rows by this clock.
          now: clock?.now,
        }),
      stop: (pruner) => pruner.stop(),
    });
    await components.start({
      name: "dispatcher",
      start: () => dispatcher.start(),
      stop: async () => {
        drained = await dispatcher.stop(SHUTDOWN_WAIT_MS);
        if (!drained)
          logger.warn("some turns were still running; they will run again after the restart");
      },
    });
    // The periodic jobs that queue turns: due approvals and scheduled tasks.
    const queueing = {
      logger,
      onQueued: (conversations: readonly string[]) => {
        for (const conversation of conversations) dispatcher.announce(conversation);
      },
      now: clock?.now,
    };
    await components.start({
      name: "approval expiry",
      start: () =>
        startApprovalExpiry({
          approvals: app.approvals,
          intervalMs: APPROVAL_EXPIRY_INTERVAL_MS,
          ...queueing,
        }),
      stop: (expiry) => expiry.stop(),
    });
    // Embeds new events, and the history from before, for recall by meaning; replicas share its
    // queue, so its leases too are timed by the database's clock.
    const { embeddingWorker } = app;
    if (embeddingWorker) {
      await components.start({
        name: "embedding worker",
        start: () => embeddingWorker.start(clock?.now),
        stop: () => embeddingWorker.stop(),
      });
    }
    await components.start({
      name: "scheduler",
      start: () => {
        const scheduler = startScheduler({
          tasks: app.tasks,
          intervalMs: SCHEDULER_INTERVAL_MS,
          ...queueing,
        });
        const unsubscribe = app.hooks.on("taskScheduled", (e) =>
          scheduler.addedDueAt(e.firstRunAt),
        );
        return { scheduler, unsubscribe };
      },
      stop: ({ scheduler, unsubscribe }) => {
        unsubscribe();
        return scheduler.stop();
      },
    });
    if (!webhook) {
      await components.start({
        name: "long polling",
        start: () =>
          startPolling({
            api: pollingApi,
            ingest: answering.ingest,
            logger,
            allowedUpdates: [...ALLOWED_UPDATES],
          }),
        stop: (polling) => polling.stop(),
      });
    }
    await components.start({
      name: "readiness",
      start: () => {
        if (config.allowedUserIds.length === 0) {
          logger.warn(
            "ALLOWED_USER_IDS is empty, so nobody may use the bot yet: message it, and it answers with your user id to add",
          );
        }
        // The probe writes as the webhook's store does: a database that answers reads but cannot
        // store an update (a full disk) is not ready.
        readiness.ready(() => inbox.probeWrite());
        logger.info(
          {
            mode,
            host: listener.address.address,
            port: listener.address.port,
            bot: bot.botInfo.username,
          },
          "Koroku is running",
        );
      },
      stop: () => {
        readiness.stopping();
        logger.info("shutting down: no new updates, waiting for running turns");
        listener.stopTaking();
      },
    });
    return { address: listener.address, mode, stop: () => components.stop() };
  } catch (error) {
    throw signal?.aborted ? signal.reason : explainStartupFailure(error);
  }
}
