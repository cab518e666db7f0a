import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Update } from "grammy/types";
import { contentsFor } from "../src/agent/contents.js";
import type { GeminiFiles } from "../src/agent/gemini-files.js";
import type { ModelClient } from "../src/agent/model-client.js";
import { INLINE_BUDGET_BYTES } from "../src/agent/request-media.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { putAttachment } from "../src/session/attachments.js";
import type { SessionEvent } from "../src/session/events.js";
import { createPendingTopicNames } from "../src/session/pending-topic-names.js";
import { createBot } from "../src/telegram/bot.js";
import { startFakeGemini, text } from "../test/fakes/gemini.js";
import { startFakeTelegram } from "../test/fakes/telegram.js";
import { heldLease } from "../test/helpers/lease.js";
import { moveNothing } from "../test/helpers/move-nothing.js";
import type { BenchRow } from "./run.js";
import { round, summarize } from "./stats.js";

const USER = 777;
const PHOTO_TURNS = 20;
const HISTORY_PHOTOS = 200;
const BUILDS = 30;

/** A whole JPEG of `size` bytes, different for every seed (so none is stored only once). */
export function jpeg(seed: number, size: number): Buffer {
  const bytes = Buffer.alloc(size, seed % 251);
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  bytes.writeUInt32BE(seed, 4);
  bytes.set([0xff, 0xd9], size - 2);
  return bytes;
}

/**
 * The media targets, in process on SQLite: a turn with a 10 MB photo through the real bot
 * (getFile, download, checks, storage, request building, answer) with Gemini's time taken out
 * (the model's answer, and the photo's upload: past the inline rule, its bytes go to Gemini
 * before the request instead of in it), and building the request of a conversation whose history
 * holds 200 photos of 1 MB.
 */
export async function mediaBenchmark(deps: { progress(line: string): void }): Promise<BenchRow[]> {
  const gemini = await startFakeGemini();
  const telegram = await startFakeTelegram();
  const dir = mkdtempSync(join(tmpdir(), "koroku-bench-media-"));
  const logger = createLogger({ level: "silent", secrets: [] });
  const config = loadConfig(
    {
      GEMINI_API_KEY: "bench",
      GEMINI_BASE_URL: gemini.baseUrl,
      DATABASE_URL: `sqlite:${join(dir, "bench.db")}`,
      MEMORY_DIR: join(dir, "memory"),
      WORKSPACE_DIR: join(dir, "workspace"),
      COMPACTION_MAX_EVENTS: "0",
      COMPACTION_MAX_TOKENS: "0",
    },
    { requireTelegram: false },
  );
  // Gemini's time: its answers, and taking the files past the inline rule.
  let modelMs = 0;
  const uploadMs: number[] = [];
  const timed = async <T>(work: () => Promise<T>, spent?: (ms: number) => void): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      const ms = performance.now() - started;
      modelMs += ms;
      spent?.(ms);
    }
  };
  const app = await createApp(config, logger, {
    wrapModel: (model): ModelClient => ({
      generate: (request) => timed(() => model.generate(request)),
    }),
    wrapFiles: (files): GeminiFiles => ({
      upload: (...args) =>
        timed(
          () => files.upload(...args),
          (ms) => uploadMs.push(ms),
        ),
      check: (name) => timed(() => files.check(name)),
    }),
  });
  gemini.setDefault(text("a photo"));
  try {
    const { runUpdate } = createBot({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      allowedUserIds: [USER],
      agent: app.agent,
      hooks: app.hooks,
      store: app.store,
      tasks: app.tasks,
      usage: app.usage,
      memory: { profiles: app.profiles, forgetting: app.forgetting },
      pendingTopicNames: createPendingTopicNames({ db: app.database.db }),
      moveConversation: moveNothing,
      compact: (chatId, guard) => app.compactor.compact(chatId, { guard }),
      logger,
      settings: {
        model: config.geminiModel,
        maxEvents: 0,
        maxTokens: 0,
        timeZone: config.timeZone,
      },
      botInfo: telegram.bot,
      streaming: "off",
      media: {
        save: app.attachments.save,
        read: app.attachments.read,
        maxBytes: config.mediaMaxBytes,
        workspaces: app.workspaces,
      },
    });
    const serviceMs: number[] = [];
    for (let i = 0; i < PHOTO_TURNS + 2; i++) {
      const file = telegram.addFile(jpeg(i, 10 * 1024 * 1024));
      const update = {
        update_id: i + 1,
        message: {
          message_id: i + 1,
          date: Math.floor(Date.now() / 1000),
          // A chat of its own per turn: the request carries this one photo.
          chat: { id: USER * 1000 + i, type: "private", first_name: "B" },
          from: { id: USER, is_bot: false, first_name: "B" },
          photo: [{ ...file, width: 4000, height: 3000 }],
        },
      } as Update;
      const before = modelMs;
      const started = performance.now();
      await runUpdate(update, heldLease(update));
      const spent = performance.now() - started - (modelMs - before);
      // The first two warm the code paths up.
      if (i >= 2) serviceMs.push(spent);
      telegram.forgetCalls();
      gemini.requests.length = 0;
      // The fake would otherwise hold every photo uploaded to it.
      gemini.files.expire();
    }
    deps.progress(`media: ${PHOTO_TURNS} turns with a 10 MB photo`);

    const chat = "history-200";
    for (let i = 0; i < HISTORY_PHOTOS; i++) {
      const stored = await putAttachment(app.database.db, chat, {
        bytes: jpeg(10_000 + i, 1024 * 1024),
        mimeType: "image/jpeg",
      });
      const user: SessionEvent = {
        v: 1,
        event_type: "session",
        role: "user",
        parts: [
          { kind: "media", media: "photo", ...stored },
          { kind: "text", text: `photo ${i}` },
        ],
      };
      const model: SessionEvent = {
        v: 1,
        event_type: "session",
        role: "model",
        parts: [{ kind: "text", text: `a photo numbered ${i}` }],
      };
      await app.store.append(chat, [{ event: user }, { event: model }]);
    }
    // The first request uploads the photos past the inline rule (once per 48 hours).
    await app.media.forRequest(await app.store.loadContext(chat));
    const buildMs: number[] = [];
    for (let i = 0; i < BUILDS; i++) {
      const started = performance.now();
      const context = await app.store.loadContext(chat);
      const media = await app.media.forRequest(context);
      const contents = contentsFor(context, media.toGemini);
      buildMs.push(performance.now() - started);
      if (contents.length !== HISTORY_PHOTOS * 2) throw new Error("the request lost turns");
    }
    deps.progress(`media: ${BUILDS} requests built over ${HISTORY_PHOTOS} photos`);

    const service = summarize(serviceMs);
    const build = summarize(buildMs);
    return [
      {
        benchmark: "media",
        database: "sqlite",
        case: "turn with a 10 MB photo",
        metric: "service time p50 (Gemini excluded)",
        value: round(service.p50, 1),
        unit: "ms",
        target: "< 150 ms",
        ok: service.p50 < 150,
        note: `p99 ${round(service.p99, 1)} ms over ${PHOTO_TURNS} turns; its upload to the fake Files API, also excluded, p50 ${round(summarize(uploadMs.slice(2, PHOTO_TURNS + 2)).p50, 1)} ms`,
      },
      {
        benchmark: "media",
        database: "sqlite",
        case: "200 photos (1 MB) in history",
        metric: "request building p50",
        value: round(build.p50, 1),
        unit: "ms",
        target: "< 50 ms",
        ok: build.p50 < 50,
        note: `p99 ${round(build.p99, 1)} ms; the oldest ${INLINE_BUDGET_BYTES / 1024 / 1024} MB inline, the rest by Files API uri (uploaded before)`,
      },
    ];
  } finally {
    await app.database.close();
    await gemini.close();
    await telegram.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
