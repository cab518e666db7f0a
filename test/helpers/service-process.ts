import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message, Update } from "grammy/types";
import { type FakeGemini, startFakeGemini } from "../fakes/gemini.js";
import {
  buildTextUpdate,
  type FakeTelegram,
  type FakeTelegramOptions,
  type FileRef,
  startFakeTelegram,
} from "../fakes/telegram.js";
import { chatFor } from "../fakes/telegram-objects.js";
import { createTestDatabase, type DatabaseKindName, type TestDatabase } from "./databases.js";
import { type RunningService, spawnService } from "./spawn-service.js";

export const ALLOWED_USER = 424242;
export const WEBHOOK_SECRET = "test-webhook-secret";

export type { RunningService };

export type ServiceWorld = {
  telegram: FakeTelegram;
  gemini: FakeGemini;
  db: TestDatabase;
  env: Record<string, string>;
  service: RunningService;
  /**
   * Starts another process of the service on the same database and fakes; `logs`, when given,
   * collects its log lines from the start, before it is ready; `onSpawn` gets its process then.
   */
  start(
    extraEnv?: Record<string, string>,
    logs?: Record<string, unknown>[],
    onSpawn?: (proc: ChildProcess) => void,
  ): Promise<RunningService>;
  post(
    update: unknown,
    options?: { secret?: string | null; raw?: string; service?: Pick<RunningService, "baseUrl"> },
  ): Promise<Response>;
  nextUpdateId(): number;
  /** Posts a text message from the allowed user through the webhook. */
  say(
    text: string,
    options?: { chatId?: number; userId?: number; threadId?: number; forum?: boolean },
  ): Promise<number>;
  close(): Promise<void>;
};

/** The fakes, a database of its own and the service on them (in webhook mode unless told). */
export async function startWorld(
  options: {
    kind?: DatabaseKindName;
    env?: Record<string, string>;
    webhook?: boolean;
    telegram?: FakeTelegramOptions;
  } = {},
): Promise<ServiceWorld> {
  const telegram = await startFakeTelegram(options.telegram);
  const gemini = await startFakeGemini();
  const db = await createTestDatabase(options.kind ?? "sqlite");
  const root = mkdtempSync(join(tmpdir(), "koroku-e2e-"));
  const env: Record<string, string> = {
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    GEMINI_API_KEY: "test-key",
    GEMINI_BASE_URL: gemini.baseUrl,
    GEMINI_MODEL: "chat-model",
    GEMINI_COMPACTION_MODEL: "summary-model",
    ALLOWED_USER_IDS: String(ALLOWED_USER),
    DATABASE_URL: db.url,
    MEMORY_DIR: join(root, "memory"),
    WORKSPACE_DIR: join(root, "workspace"),
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info",
    // The suites written for HTML messages; test/e2e/rich-messages.test.ts turns rich ones on.
    RICH_MESSAGES: "false",
    ...(options.webhook === false
      ? {}
      : { WEBHOOK_URL: "https://koroku.test/telegram/webhook", WEBHOOK_SECRET }),
    ...options.env,
  };
  const services: RunningService[] = [];
  const start = async (
    extraEnv: Record<string, string> = {},
    logs?: Record<string, unknown>[],
    onSpawn?: (proc: ChildProcess) => void,
  ) => {
    const s = await spawnService({ env: { ...env, ...extraEnv }, logs, onSpawn });
    services.push(s);
    return s;
  };
  const service = await start();
  let updateId = 1000;
  const world: ServiceWorld = {
    telegram,
    gemini,
    db,
    env,
    service,
    start,
    nextUpdateId: () => ++updateId,
    post(update, opts = {}) {
      const secret = opts.secret === undefined ? WEBHOOK_SECRET : opts.secret;
      return fetch(`${(opts.service ?? world.service).baseUrl}/telegram/webhook`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret === null ? {} : { "x-telegram-bot-api-secret-token": secret }),
        },
        body: opts.raw ?? JSON.stringify(update),
      });
    },
    async say(text, opts = {}) {
      const id = ++updateId;
      const res = await world.post(
        buildTextUpdate({
          updateId: id,
          messageId: id,
          text,
          userId: opts.userId ?? ALLOWED_USER,
          chatId: opts.chatId,
          threadId: opts.threadId,
          forum: opts.forum,
        }),
      );
      if (res.status !== 200)
        throw new Error(`webhook answered ${res.status}: ${await res.text()}`);
      return id;
    },
    async close() {
      for (const s of services) {
        if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
        await s.exited;
      }
      await telegram.close();
      await gemini.close();
      await db.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return world;
}

/** Polls until `check` returns a value (not undefined/false) or the time runs out. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A world whose first service has stopped: the fakes and the database stay, and the database's
 * lock is free for the services a test starts itself.
 */
export async function startStoppedWorld(): Promise<ServiceWorld> {
  const world = await startWorld();
  world.service.proc.kill("SIGTERM");
  await world.service.exited;
  return world;
}

/** A message from the user in their private chat with `content`, as Telegram sends it. */
export function privateMessageUpdate(
  w: ServiceWorld,
  chatId: number,
  content: Partial<Message>,
  firstName = "T",
): Update {
  const id = w.nextUpdateId();
  const message = {
    message_id: id,
    date: Math.floor(Date.now() / 1000),
    chat: chatFor(chatId),
    from: { id: chatId, is_bot: false, first_name: firstName },
    ...content,
  } as Message;
  return { update_id: id, message } as Update;
}

/** A photo message from the user in their private chat. */
export const photoUpdate = (w: ServiceWorld, chatId: number, file: FileRef, caption: string) =>
  privateMessageUpdate(w, chatId, { photo: [{ ...file, width: 800, height: 600 }], caption });
