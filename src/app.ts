import { createCompactor } from "./agent/compaction.js";
import {
  createGeminiClient,
  type GeminiClientDeps,
  RATE_LIMIT_BACKOFF,
} from "./agent/gemini-client.js";
import { createGeminiFiles, type GeminiFiles, type GeminiFilesDeps } from "./agent/gemini-files.js";
import { AgentHooks } from "./agent/hooks.js";
import type { ModelClient } from "./agent/model-client.js";
import { createMediaSource } from "./agent/request-media.js";
import { createTranscriber } from "./agent/transcription.js";
import { createAgent } from "./agent/turn.js";
import { createApprovals } from "./approvals/approvals.js";
import { createPolicies } from "./approvals/policy.js";
import type { Config } from "./config.js";
import { type DatabaseHandle, openDatabase } from "./db/connect.js";
import { migrateToLatest } from "./db/migrate.js";
import { explainDatabaseFailure, openExplained } from "./db/open-failures.js";
import { createGenerateImageTool } from "./images/generate-image.js";
import type { Logger } from "./logger.js";
import { instrumentAgent, instrumentModel, observeHooks } from "./metrics/instrument.js";
import { createMetrics } from "./metrics/metrics.js";
import { createConsolidation } from "./recall/consolidation.js";
import { createForgetting } from "./recall/forgetting.js";
import { createMeaning, forgetEmbeddings } from "./recall/meaning.js";
import { createProfiles, profileInstruction } from "./recall/profile.js";
import { createProfileTools } from "./recall/profile-tools.js";
import { createRecall } from "./recall/recall.js";
import { scopeMemoryEntries } from "./recall/scope-memory.js";
import { createSharedLimit } from "./retry/shared-limit.js";
import { scopeName } from "./scope/recall-scope.js";
import { sortWorkspaceAtStart } from "./scope/workspace-migration.js";
import { createWorkspaces } from "./scope/workspaces.js";
import { type NewAttachment, putAttachment, readAttachments } from "./session/attachments.js";
import { findGeminiFiles, forgetGeminiFiles, saveGeminiFile } from "./session/gemini-file-refs.js";
import { createSessionStore } from "./session/store.js";
import { createTaskStore, DEFAULT_RUNS_PER_HOUR } from "./tasks/store.js";
import { createTaskTools } from "./tasks/tools.js";
import { createBuiltinTools } from "./tools/builtins.js";
import { combineRegistries, createToolRegistry } from "./tools/registry.js";
import { recordUsage } from "./usage/recorder.js";
import { createUsageStore } from "./usage/usage-store.js";
import { createVoiceEncoder } from "./voice/encoder-pool.js";
import { createSpeaker } from "./voice/speech.js";
import { createVoiceReplies } from "./voice/voice-reply.js";
import { createVoiceSettings } from "./voice/voice-settings.js";

export type App = Awaited<ReturnType<typeof createApp>>;

/**
 * Everything a front end (the Telegram service, the terminal chat) needs, built from the config:
 * the migrated database, the session store, Gemini, the tools, the agent and its compactor.
 */
export async function createApp(
  config: Config,
  logger: Logger,
  overrides: {
    database?: DatabaseHandle;
    gemini?: Pick<GeminiClientDeps, "retry" | "sleep" | "timeoutMs">;
    /** The Files API's timing: tests poll a processing video without waiting seconds. */
    geminiFiles?: Pick<
      GeminiFilesDeps,
      "retry" | "sleep" | "pollMs" | "timeoutMs" | "maxProcessingMs"
    >;
    /** Wraps the Gemini client, e.g. to time model calls apart from everything else. */
    wrapModel?: (model: ModelClient) => ModelClient;
    /** Wraps the Files API client, e.g. to time uploads apart from everything else. */
    wrapFiles?: (files: GeminiFiles) => GeminiFiles;
  } = {},
) {
  const metrics = createMetrics();
  const handle =
    overrides.database ??
    openExplained(config.database, () =>
      openDatabase(config.database, { logger, onQueryError: () => metrics.databaseError() }),
    );
  await handle
    .unbounded(() => migrateToLatest(handle.db, logger))
    .catch(async (error: unknown) => {
      // A database opened here is closed again; one given is its owner's.
      if (!overrides.database) await handle.close().catch(() => {});
      throw explainDatabaseFailure(error, config.database);
    });
  // Another replica sorting the workspace holds the lock for as long as its files take.
  await handle.unbounded(() =>
    sortWorkspaceAtStart({
      workspaceDir: config.workspaceDir,
      db: handle.db,
      kind: handle.kind,
      logger,
    }),
  );
  const workspaces = createWorkspaces(config.workspaceDir);
  const store = createSessionStore({ db: handle.db, logger });
  const profiles = createProfiles({ db: handle.db });
  const hooks = new AgentHooks((name, error) =>
    logger.error({ err: error, hook: name }, "a hook listener failed"),
  );
  // One limit for every Gemini call of the process (turns, summaries, transcripts): they share
  // the API key, and with it its quota.
  const geminiLimit = createSharedLimit({
    policy: RATE_LIMIT_BACKOFF,
    onLimited: () => metrics.geminiRateLimited(),
  });
  metrics.watchGeminiLimit(() => geminiLimit.closedForMs());
  const gemini = createGeminiClient({
    apiKey: config.geminiApiKey,
    baseUrl: config.geminiBaseUrl,
    limit: geminiLimit,
    logger,
    ...overrides.gemini,
  });
  const model = instrumentModel(overrides.wrapModel?.(gemini) ?? gemini, metrics);
  const meaning = await createMeaning({
    config,
    database: handle,
    limit: geminiLimit,
    logger,
    metrics,
  });
  const recall = createRecall({
    db: handle.db,
    loadContext: store.loadContext,
    ...(meaning ? { meaning } : {}),
    logger,
  });
  const forgetting = createForgetting({
    db: handle.db,
    profiles,
    keyword: recall.keyword,
    memory: scopeMemoryEntries(config.memoryDir),
    onForgotten: (ids) => forgetEmbeddings(handle.db, ids),
  });
  if (config.enableShellTool) {
    logger.warn(
      "ENABLE_SHELL_TOOL is on: run_command gives the model a shell with this process's rights, so it can read the bot's token and API key (from /proc), the database and the memory files; run the bot as a user, or in a container, that holds nothing else",
    );
  }
  const readBytes = (hashes: readonly string[]) => readAttachments(handle.db, hashes);
  /** The conversation's files in the database (src/session/attachments.ts). */
  const attachments = {
    save: (chatId: string, file: NewAttachment) => putAttachment(handle.db, chatId, file),
    read: readBytes,
  };
  const tasks = createTaskStore({
    db: handle.db,
    kind: handle.kind,
    onRunsHeldBack: (conversation, waiting) =>
      logger.warn(
        { chat_id: conversation, waiting, runs_per_hour: DEFAULT_RUNS_PER_HOUR },
        "a conversation's scheduled runs reached their hourly limit; its other due tasks wait",
      ),
  });
  // Started before the first turn, not awaited: a slow or broken server must not hold start-up
  // up; its tools are offered once it answers. The MCP SDK is loaded only when a server is
  // configured: a service without one holds 4 MB less after start.
  const mcp =
    config.mcp.servers.length > 0
      ? (await import("./mcp/mcp-tools.js")).startMcpTools(config.mcp, {
          logger,
          saveFile: attachments.save,
        })
      : undefined;
  const builtins = createToolRegistry(
    createBuiltinTools({
      workspaces,
      memoryDir: config.memoryDir,
      enableShell: config.enableShellTool,
      search: recall.search,
      saveFile: attachments.save,
      timeZone: config.timeZone,
      extra: [
        ...createTaskTools({
          tasks,
          timeZone: config.timeZone,
          now: Date.now,
          onAdded: (chatId, firstRunAt) => hooks.emit("taskScheduled", { chatId, firstRunAt }),
        }),
        ...createProfileTools({ profiles }),
        createGenerateImageTool({
          model,
          hooks,
          store,
          read: readBytes,
          saveFile: attachments.save,
          settings: { model: config.geminiImageModel },
        }),
      ],
    }),
  );
  const tools = mcp ? combineRegistries([builtins, mcp]) : builtins;
  const media = createMediaSource({
    readAttachments: readBytes,
    store: {
      find: (hashes) => findGeminiFiles(handle.db, hashes),
      save: (sha256, ref) => saveGeminiFile(handle.db, sha256, ref),
      forget: (hashes) => forgetGeminiFiles(handle.db, hashes),
    },
    files: (overrides.wrapFiles ?? ((files) => files))(
      createGeminiFiles({
        apiKey: config.geminiApiKey,
        baseUrl: config.geminiBaseUrl,
        logger,
        ...overrides.geminiFiles,
      }),
    ),
    logger,
  });
  const transcriber = createTranscriber({
    store,
    model,
    media,
    hooks,
    logger,
    settings: { model: config.geminiCompactionModel },
  });
  const compactor = createCompactor({
    store,
    model,
    hooks,
    logger,
    settings: {
      maxEvents: config.compactionMaxEvents,
      maxTokens: config.compactionMaxTokens,
      model: config.geminiCompactionModel,
      memoryDir: config.memoryDir,
      timeZone: config.timeZone,
    },
    afterSummary: createConsolidation({
      profiles,
      model,
      logger,
      settings: { model: config.geminiCompactionModel },
      onUsage: (chatId, usage) =>
        hooks.emit("modelCall", { chatId, model: config.geminiCompactionModel, usage }),
    }),
  });
  const approvals = createApprovals({
    db: handle.db,
    policyOf: createPolicies(config.mcp),
    timeoutMs: config.approvalTimeoutMs,
    logger,
  });
  const agent = instrumentAgent(
    createAgent({
      store,
      media,
      saveFile: attachments.save,
      model,
      tools,
      hooks,
      logger,
      compactor,
      approvals: approvals.gate,
      settings: {
        model: config.geminiModel,
        maxToolCallsPerTurn: config.maxToolCallsPerTurn,
        thinkingLevel: config.geminiThinkingLevel,
        builtinTools: config.geminiBuiltinTools,
      },
      timeZone: config.timeZone,
      scopeInstruction: async (scope) => profileInstruction(await profiles.list(scopeName(scope))),
    }),
    metrics,
  );
  observeHooks(
    hooks,
    metrics,
    tools.declarations().map((d) => d.name ?? ""),
  );
  const encoder = createVoiceEncoder();
  const speaker = createSpeaker({
    model,
    hooks,
    encoder,
    settings: { model: config.geminiTtsModel, voice: config.geminiVoice },
  });
  const voice = {
    replies: createVoiceReplies({ speaker, save: attachments.save, store, logger }),
    settings: createVoiceSettings({ db: handle.db, fallback: config.voiceReplies }),
    encoder,
  };
  const usage = createUsageStore(handle.db);
  const usageRecorder = recordUsage({ hooks, store: usage, logger });
  return {
    config,
    logger,
    database: handle,
    store,
    recall,
    profiles,
    forgetting,
    /** The background embedding of what recall finds by meaning; undefined when it is off. */
    embeddingWorker: meaning?.worker,
    hooks,
    agent,
    compactor,
    transcriber,
    media,
    attachments,
    workspaces,
    tools,
    mcp,
    approvals,
    metrics,
    tasks,
    usage,
    usageRecorder,
    voice,
  };
}
