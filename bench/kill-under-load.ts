import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseKind } from "../src/db/connect.js";
import { type RecordedRequest, text } from "../test/fakes/gemini.js";
import { buildTextUpdate } from "../test/fakes/telegram.js";
import { wordsOf } from "../test/helpers/stamps.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { startFakes } from "./fakes.js";
import type { BenchRow } from "./run.js";
import {
  freePort,
  type ServiceProcess,
  serviceEnv,
  startService,
  WEBHOOK_SECRET,
} from "./service-process.js";
import { createWebhookPoster, type WebhookPoster } from "./webhook-poster.js";

const FIRST_USER_ID = 2_000_001;
const DRAIN_TIMEOUT_MS = 120_000;

export type KillUnderLoadOptions = {
  database: DatabaseKind;
  postgresUrl: string;
  chats: number;
  messagesPerChat: number;
  /** How long the fake Gemini takes per answer. */
  modelDelayMs: number;
  kills: number;
  progress?: (line: string) => void;
};

export type KillUnderLoadResult = {
  updates: number;
  /** Updates that never got an answer: must be 0. */
  lost: number;
  /** The most times one update was answered. */
  mostAnswersOfOne: number;
  /** Answers sent a second (or later) time, by the kill after which they were sent again. */
  duplicatesPerKill: number[];
};

const lastUserText = (r: RecordedRequest) => wordsOf(r.body.contents.at(-1)?.parts);

/**
 * The service under load is killed with SIGKILL again and again, as a crash or an OOM kill would,
 * and started again each time; the updates whose webhook call had not been answered are posted
 * again, as Telegram would. Every chat has its own messages in flight throughout. Counted at the
 * fake Telegram: updates never answered (lost) and answers that arrived twice (duplicates).
 */
export async function runKillUnderLoad(
  options: KillUnderLoadOptions,
): Promise<KillUnderLoadResult> {
  const fakes = await startFakes();
  fakes.gemini.setDefault((r) => ({
    ...text(`echo: ${lastUserText(r)}`),
    delayMs: options.modelDelayMs,
  }));
  const database = await createBenchDatabase(options.database, options.postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-kill-"));
  const allowedUserIds = Array.from({ length: options.chats }, (_, i) => FIRST_USER_ID + i);
  const updates = allowedUserIds.flatMap((userId, chat) =>
    Array.from({ length: options.messagesPerChat }, (_, m) => {
      const updateId = 1 + chat * options.messagesPerChat + m;
      const question = `q-${chat}-${m}`;
      const body = JSON.stringify(
        buildTextUpdate({ updateId, messageId: updateId, text: question, userId }),
      );
      return { updateId, answer: `echo: ${question}`, body };
    }),
  );
  const answers = new Map<string, number>();
  let answered = 0;
  let duplicates = 0;
  const stopListening = fakes.onArrival((arrival) => {
    if (arrival.method.toLowerCase() !== "sendmessage" || arrival.text === undefined) return;
    const seen = answers.get(arrival.text) ?? 0;
    answers.set(arrival.text, seen + 1);
    if (seen === 0) answered++;
    else duplicates++;
  });
  const env = {
    ...serviceEnv({
      fakes,
      database: database.target,
      port: await freePort(),
      allowedUserIds,
      dataDir,
    }),
    STREAMING: "off",
    // The lease another start waits out on PostgreSQL before it runs an interrupted update again.
    INBOX_LEASE_SECONDS: "5",
  };

  let service: ServiceProcess | undefined;
  let poster: WebhookPoster | undefined;
  const unacknowledged = new Set(updates.map((u) => u.updateId));
  const start = async () => {
    service = await startService({ env, fakes });
    const current = createWebhookPoster({
      baseUrl: service.baseUrl,
      secret: WEBHOOK_SECRET,
      maxSockets: 8,
    });
    poster = current;
    for (const update of updates) {
      if (!unacknowledged.has(update.updateId)) continue;
      current.post(update.body).then(
        () => unacknowledged.delete(update.updateId),
        () => {},
      );
    }
  };
  const until = async (condition: () => boolean, what: string) => {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen in time`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };

  const duplicatesPerKill: number[] = [];
  const answersPerRun = Math.floor(updates.length / (options.kills + 2));
  try {
    await start();
    for (let kill = 0; kill < options.kills; kill++) {
      const target = answered + answersPerRun;
      await until(() => answered >= target, `${target} answers`);
      process.kill(service?.pid as number, "SIGKILL");
      poster?.close();
      await until(() => service === undefined || !isAlive(service.pid), "the kill");
      const before = duplicates;
      await start();
      // Duplicates of this kill are the answers sent again by the runs after it.
      duplicatesPerKill.push(before);
    }
    await until(() => answered === updates.length, "every update answered");
    // Late duplicates, if any, come with the last recovered runs.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await service?.stop();
  } finally {
    stopListening();
    poster?.close();
    if (service && isAlive(service.pid)) process.kill(service.pid, "SIGKILL");
    await fakes.close();
    await database.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
  // Snapshots taken before each kill: the differences are each kill's duplicates.
  const snapshots = [...duplicatesPerKill, duplicates];
  const perKill = snapshots.slice(1).map((total, i) => total - (snapshots[i] as number));
  options.progress?.(
    `kill-under-load ${options.database}: ${answered}/${updates.length} answered, duplicates per kill ${perKill.join(", ")}`,
  );
  return {
    updates: updates.length,
    lost: updates.length - answered,
    mostAnswersOfOne: Math.max(0, ...answers.values()),
    duplicatesPerKill: perKill,
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const CHATS = 100;
const MESSAGES_PER_CHAT = 3;
const MODEL_DELAY_MS = 300;
const KILLS = 8;

/** `npm run bench kill`: duplicates per kill -9 with 100 chats in flight, on each database. */
export async function killUnderLoadBenchmark(options: DatabaseBenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const database of options.databases) {
    const result = await runKillUnderLoad({
      database,
      postgresUrl: options.postgresUrl,
      chats: CHATS,
      messagesPerChat: MESSAGES_PER_CHAT,
      modelDelayMs: MODEL_DELAY_MS,
      kills: KILLS,
      progress: options.progress,
    });
    const kase = `${CHATS} chats × ${MESSAGES_PER_CHAT} messages, ${MODEL_DELAY_MS} ms model, ${KILLS} × kill -9`;
    const total = result.duplicatesPerKill.reduce((a, b) => a + b, 0);
    const worst = Math.max(...result.duplicatesPerKill);
    rows.push(
      {
        benchmark: "kill-under-load",
        database,
        case: kase,
        metric: "duplicates per kill (worst)",
        value: worst,
        unit: "answers",
        target: "≤ 1",
        ok: worst <= 1,
        note: `${total} over ${KILLS} kills: ${result.duplicatesPerKill.join(", ")}`,
      },
      {
        benchmark: "kill-under-load",
        database,
        case: kase,
        metric: "lost",
        value: result.lost,
        unit: "updates",
        target: "0",
        ok: result.lost === 0,
      },
    );
  }
  return rows;
}
