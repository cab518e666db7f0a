import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import type { ModelClient } from "../../src/agent/model-client.js";
import { type App, createApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import type { Logger } from "../../src/logger.js";
import { scopeName, scopeOfKey } from "../../src/scope/recall-scope.js";
import { type FakeGemini, type FakeGeminiOptions, startFakeGemini } from "../fakes/gemini.js";
import { createTestDatabase, type DatabaseKindName, type TestDatabase } from "./databases.js";
import { captureLogger, type LogLine } from "./logs.js";

export const CHAT_MODEL = "chat-model";
export const SUMMARY_MODEL = "summary-model";

export type Harness = {
  fake: FakeGemini;
  app: App;
  dirs: { workspace: string; memory: string };
  /** The workspace folder of a conversation's recall scope, where its file tools work. */
  workspaceOf(conversation: string): string;
  logs: LogLine[];
  /** A new app on the same database and folders: what a process restart sees. */
  restart(): Promise<App>;
  close(): Promise<void>;
};

/** The real app (createApp) on a fresh database, talking to a fake Gemini over HTTP. */
export async function startHarness(
  options: {
    kind?: DatabaseKindName;
    env?: Record<string, string>;
    gemini?: FakeGeminiOptions;
    wrapModel?: (model: ModelClient) => ModelClient;
    /** Logs somewhere else than `logs`, which then stays empty. */
    logger?: Logger;
    /** How long Gemini may process an uploaded file (GeminiFilesDeps.maxProcessingMs). */
    maxProcessingMs?: number;
  } = {},
): Promise<Harness> {
  const fake = await startFakeGemini(options.gemini);
  const testDb: TestDatabase = await createTestDatabase(options.kind ?? "sqlite");
  const root = mkdtempSync(join(tmpdir(), "koroku-harness-"));
  const dirs = { workspace: join(root, "workspace"), memory: join(root, "memory") };
  const config = loadConfig(
    {
      GEMINI_API_KEY: "test-key",
      GEMINI_BASE_URL: fake.baseUrl,
      GEMINI_MODEL: CHAT_MODEL,
      GEMINI_COMPACTION_MODEL: SUMMARY_MODEL,
      DATABASE_URL: testDb.url,
      WORKSPACE_DIR: dirs.workspace,
      MEMORY_DIR: dirs.memory,
      COMPACTION_MAX_EVENTS: "0",
      COMPACTION_MAX_TOKENS: "0",
      ...options.env,
    },
    { requireTelegram: false },
  );
  const { logger, lines } = options.logger
    ? { logger: options.logger, lines: [] }
    : captureLogger(["test-key"]);
  const fastRetry = {
    retry: { baseMs: 1, maxMs: 5, maxTotalMs: 2_000 },
    timeoutMs: 5_000,
  };
  const apps: App[] = [];
  const boot = async () => {
    const app = await createApp(config, logger, {
      gemini: fastRetry,
      geminiFiles: {
        ...fastRetry,
        pollMs: 1,
        ...(options.maxProcessingMs === undefined
          ? {}
          : { maxProcessingMs: options.maxProcessingMs }),
      },
      ...(options.wrapModel ? { wrapModel: options.wrapModel } : {}),
    });
    apps.push(app);
    return app;
  };
  const app = await boot();
  return {
    fake,
    app,
    dirs,
    workspaceOf: (conversation) => join(dirs.workspace, scopeName(scopeOfKey(conversation))),
    logs: lines,
    restart: boot,
    async close() {
      for (const a of apps) await a.database.close();
      await fake.close();
      await testDb.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh harness for every test of the calling describe block; each test also checks that the
 * fake Gemini refused nothing the app sent.
 */
export function harnessPerTest(options: Parameters<typeof startHarness>[0] = {}): () => Harness {
  let harness: Harness | undefined;
  beforeEach(async () => {
    harness = await startHarness(options);
  });
  afterEach(async () => {
    expect(harness?.fake.rejections).toEqual([]);
    await harness?.close();
  });
  return () => {
    if (!harness) throw new Error("harnessPerTest: used outside a test");
    return harness;
  };
}
