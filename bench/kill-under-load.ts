import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type DatabaseHandle, type DatabaseKind, openDatabase } from "../src/db/connect.js";
import { type RecordedRequest, text } from "../test/fakes/gemini.js";
import { buildTextUpdate } from "../test/fakes/telegram.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { wordsOf } from "../test/helpers/stamps.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { startFakes, type TelegramArrival } from "./fakes.js";
import type { BenchRow } from "./run.js";
import {
  type ServiceProcess,
  serviceEnv,
  startService,
  WEBHOOK_SECRET,
} from "./service-process.js";
import { round } from "./stats.js";
import { createWebhookPoster, type WebhookPoster } from "./webhook-poster.js";

const FIRST_USER_ID = 2_000_001;
/** How long the run may go without a new answer before it is given up as stuck. */
const STALL_TIMEOUT_MS = 60_000;
const POLL_MS = 20;
const RATE_WINDOW_MS = 1_000;

export type KillUnderLoadOptions = {
  database: DatabaseKind;
  postgresUrl: string;
  chats: number;
  messagesPerChat: number;
  /**
   * How long the fake Gemini takes per answer, on average: each question takes its own time
   * between half and one and a half of this, so that chats drift apart instead of being answered
   * in waves, and answers reach Telegram at a steady rate.
   */
  modelDelayMs: number;
  kills: number;
  /**
   * When each kill comes once its number of answers has reached Telegram: "arrival", in the same
   * turn of the event loop as the answer that made the number (so that answer is always sent
   * again: one duplicate a kill by construction); "random", 0–100 ms later, at a moment tied to
   * no message, as a crash or an OOM kill would come. Arrival by default.
   */
  killAt?: "arrival" | "random";
  progress?: (line: string) => void;
};

export type KillUnderLoadResult = {
  updates: number;
  /** Updates that never got an answer: must be 0. */
  lost: number;
  /** The most times one update was answered. */
  mostAnswersOfOne: number;
  /**
   * Answers sent again by a later run, by the kill that ended the run which had sent them: each
   * is an answer Telegram accepted whose record that run had not made durable when it was killed.
   */
  duplicatesPerKill: number[];
  /** Answers sent twice with no kill in between (lost leases): 0 unless something is wrong. */
  duplicatesWithoutKill: number;
  /**
   * For each duplicate, how long before its kill the earlier copy had reached Telegram (negative:
   * after the kill, from a request already on its way): the window each duplicate fell into.
   */
  duplicateLeadsMs: number[];
  /**
   * Of duplicatesPerKill, those whose earlier copy the fake Telegram had answered before the kill:
   * the reply was on the service's side, read late or read and not yet recorded. The others were
   * still being answered at the kill, which no record can save (Telegram has no idempotency key).
   */
  repliedDuplicatesPerKill: number[];
  /**
   * Of duplicatesPerKill, the answer whose arrival set off the kill ("arrival" kills): 1 a kill,
   * since the service cannot have had Telegram's reply to it.
   */
  triggerDuplicatesPerKill: number[];
  /** For each replied duplicate, how long before its kill the fake had sent the reply. */
  unrecordedReplyMs: number[];
  /** Chats with an answer still to come, at each kill. */
  chatsInFlightPerKill: number[];
  /** First answers reaching Telegram per second, over the second before each kill (within its run). */
  answersPerSecondAtKill: number[];
};

const lastUserText = (r: RecordedRequest) => wordsOf(r.body.contents.at(-1)?.parts);

/** A fixed pseudo-random sequence in [0, 1) (mulberry32), so every run draws the same delays. */
function randomSequence(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

type Message = { chat: number; userId: number; question: string; answer: string };
/** A message once its user sent it: Telegram numbers updates in the order it receives them. */
type Sent = { updateId: number; body: string };

/**
 * The service under load is killed with SIGKILL again and again, as a crash or an OOM kill would,
 * and started again each time; the updates whose webhook call had not been answered are posted
 * again, as Telegram would. Each chat sends its next message as soon as the answer to the one
 * before arrives, as a user waiting for it would, and every chat runs at once
 * (MAX_CONCURRENT_TURNS), so every chat has one message in flight. Each kill comes the moment a
 * given number of answers has reached the fake Telegram, whatever the host's speed, all within the
 * first half of the answers, so that no chat is done by then. Counted at the fake Telegram:
 * updates never answered (lost) and answers that arrived twice (duplicates).
 */
export async function runKillUnderLoad(
  options: KillUnderLoadOptions,
): Promise<KillUnderLoadResult> {
  const fakes = await startFakes();
  const random = randomSequence(19);
  const messages: Message[][] = Array.from({ length: options.chats }, (_, chat) =>
    Array.from({ length: options.messagesPerChat }, (_, m) => ({
      chat,
      userId: FIRST_USER_ID + chat,
      question: `q-${chat}-${m}`,
      answer: `echo: q-${chat}-${m}`,
    })),
  );
  const all = messages.flat();
  const modelDelays = new Map(
    all.map((m) => [m.question, Math.round(options.modelDelayMs * (0.5 + random()))]),
  );
  fakes.gemini.setDefault((r) => {
    const question = lastUserText(r);
    return { ...text(`echo: ${question}`), delayMs: modelDelays.get(question) ?? 0 };
  });
  const database = await createBenchDatabase(options.database, options.postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-kill-"));
  const messageOf = new Map(all.map((m) => [m.answer, m]));
  const answeredOfChat = new Array<number>(options.chats).fill(0);
  /** For each answer, its latest copy and which run sent it. */
  const latest = new Map<string, { arrival: TelegramArrival; run: number }>();
  const copies = new Map<string, number>();
  const duplicatesByRun = new Array<number>(options.kills + 1).fill(0);
  const leadsByRun: number[][] = Array.from({ length: options.kills + 1 }, () => []);
  const replyWaitsByRun: number[][] = Array.from({ length: options.kills + 1 }, () => []);
  const firstAnswerTimes: number[] = [];
  const killTimes: number[] = [];
  /** The arrival that set off each kill ("arrival" kills). */
  const killTriggers: (TelegramArrival | undefined)[] = [];
  const triggersByRun = new Array<number>(options.kills + 1).fill(0);
  const killAt = options.killAt ?? "arrival";
  let killTimer: NodeJS.Timeout | undefined;
  const chatsInFlightPerKill: number[] = [];
  const answersPerSecondAtKill: number[] = [];
  const step = Math.floor(all.length / (2 * options.kills + 1));

  const allowedUserIds = messages.map((chat) => (chat[0] as Message).userId);
  const env = {
    ...serviceEnv({
      fakes,
      database: database.target,
      port: await freePort(),
      allowedUserIds,
      dataDir,
    }),
    STREAMING: "off",
    // Every chat's turn runs at once: all of them are in flight at every kill.
    MAX_CONCURRENT_TURNS: String(options.chats),
    // The lease another start waits out on PostgreSQL before it runs an interrupted update again.
    INBOX_LEASE_SECONDS: "5",
  };

  /** Runs started so far, less one: the run whose answers arrive now. */
  let run = 0;
  let runStartedAt = 0;
  let answered = 0;
  let lastAnswerAt = performance.now();
  let service: ServiceProcess | undefined;
  let poster: WebhookPoster | undefined;
  /** Set while the next kill is due, at `answered >= step × (run + 1)`. */
  let onKilled: (() => void) | undefined;
  let nextUpdateId = 1;
  const sent = new Map<Message, Sent>();
  const unacknowledged = new Set<Sent>();
  const post = (update: Sent) => {
    poster?.post(update.body).then(
      () => unacknowledged.delete(update),
      () => {},
    );
  };
  const send = (message: Message) => {
    const updateId = nextUpdateId++;
    const update = {
      updateId,
      body: JSON.stringify(
        buildTextUpdate({
          updateId,
          messageId: updateId,
          text: message.question,
          userId: message.userId,
        }),
      ),
    };
    sent.set(message, update);
    unacknowledged.add(update);
    post(update);
  };

  const kill = (at: number, trigger?: TelegramArrival) => {
    process.kill(service?.pid as number, "SIGKILL");
    killTriggers.push(trigger);
    // What the next start posts again; whatever the dead process took is in its inbox already.
    poster?.close();
    poster = undefined;
    killTimes.push(at);
    chatsInFlightPerKill.push(answeredOfChat.filter((n) => n < options.messagesPerChat).length);
    const since = Math.max(at - RATE_WINDOW_MS, runStartedAt);
    const recent = firstAnswerTimes.filter((t) => t > since).length;
    answersPerSecondAtKill.push(Math.round((recent * 1_000) / Math.max(1, at - since)));
    onKilled?.();
    onKilled = undefined;
  };

  const stopListening = fakes.onArrival((arrival) => {
    if (arrival.method.toLowerCase() !== "sendmessage" || arrival.text === undefined) return;
    const message = messageOf.get(arrival.text);
    if (message === undefined) return;
    copies.set(arrival.text, (copies.get(arrival.text) ?? 0) + 1);
    const previous = latest.get(arrival.text);
    latest.set(arrival.text, { arrival, run });
    if (previous !== undefined) {
      duplicatesByRun[previous.run] = (duplicatesByRun[previous.run] ?? 0) + 1;
      const killedAt = killTimes[previous.run];
      if (killedAt === undefined) return;
      if (killTriggers[previous.run] === previous.arrival) {
        triggersByRun[previous.run] = (triggersByRun[previous.run] ?? 0) + 1;
      }
      leadsByRun[previous.run]?.push(killedAt - previous.arrival.at);
      const repliedAt = previous.arrival.repliedAt;
      if (repliedAt !== undefined && repliedAt < killedAt) {
        replyWaitsByRun[previous.run]?.push(killedAt - repliedAt);
      }
      return;
    }
    answered++;
    lastAnswerAt = arrival.at;
    firstAnswerTimes.push(arrival.at);
    const done = (answeredOfChat[message.chat] ?? 0) + 1;
    answeredOfChat[message.chat] = done;
    const next = messages[message.chat]?.[done];
    if (next !== undefined) send(next);
    if (onKilled === undefined || answered < step * (run + 1)) return;
    // Killed in the same turn of the event loop as this answer arrived: the service has not had
    // Telegram's reply to it, the moment at which a crash costs the most.
    if (killAt === "arrival") kill(arrival.at, arrival);
    else
      killTimer ??= setTimeout(() => {
        killTimer = undefined;
        kill(performance.now());
      }, random() * 100);
  });

  const start = async () => {
    service = await startService({ env, fakes });
    runStartedAt = performance.now();
    poster = createWebhookPoster({
      baseUrl: service.baseUrl,
      secret: WEBHOOK_SECRET,
      maxSockets: 8,
    });
    for (const update of unacknowledged) post(update);
  };
  /** Polls `condition` until it holds; false when no answer came for STALL_TIMEOUT_MS. */
  const until = async (condition: () => boolean | Promise<boolean>) => {
    while (!(await condition())) {
      if (performance.now() - lastAnswerAt > STALL_TIMEOUT_MS) return false;
      await sleep(POLL_MS);
    }
    return true;
  };

  let inspector: DatabaseHandle | undefined;
  const unfinished = async () => {
    inspector ??= openDatabase(database.target, { poolSize: 1 });
    const row = await inspector.db
      .selectFrom("inbox")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("status", "in", ["pending", "running"])
      .executeTakeFirstOrThrow();
    return Number(row.count);
  };
  let stuck = "";
  try {
    await start();
    for (const chat of messages) send(chat[0] as Message);
    for (let k = 0; k < options.kills; k++) {
      let killed = false;
      onKilled = () => {
        killed = true;
      };
      if (!(await until(() => killed))) {
        onKilled = undefined;
        stuck = `no answer for ${STALL_TIMEOUT_MS / 1000} s before kill ${k + 1}`;
        break;
      }
      const pid = service?.pid as number;
      await until(() => !isAlive(pid));
      run++;
      await start();
    }
    // Every update finished in the inbox: no run is left that could still send anything.
    const drained =
      stuck === "" &&
      (await until(async () => answered === all.length && (await unfinished()) === 0));
    if (stuck === "" && !drained) stuck = `no answer for ${STALL_TIMEOUT_MS / 1000} s`;
    await service?.stop();
  } finally {
    stopListening();
    clearTimeout(killTimer);
    poster?.close();
    if (service && isAlive(service.pid)) process.kill(service.pid, "SIGKILL");
    await inspector?.close();
    await fakes.close();
    await database.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const kills = killTimes.length;
  const duplicatesPerKill = duplicatesByRun.slice(0, kills);
  const triggerDuplicatesPerKill = triggersByRun.slice(0, kills);
  const leads = leadsByRun.slice(0, kills);
  const replyWaits = replyWaitsByRun.slice(0, kills);
  const ms = (runs: number[][]) =>
    runs.map((l) => `[${l.map((m) => Math.round(m)).join(" ")}]`).join(" ");
  options.progress?.(
    `kill-under-load ${options.database}, kills at ${killAt === "arrival" ? "an arrival" : "random moments"}: ${answered}/${all.length} answered${stuck && ` (${stuck})`}, duplicates per kill ${duplicatesPerKill.join(", ")}, of which already replied to ${replyWaits.map((l) => l.length).join(", ")}, answers/s at the kills ${answersPerSecondAtKill.join(", ")}, the duplicates' earlier copies reached Telegram (ms before their kill) ${ms(leads)}, their replies were sent (ms before the kill) ${ms(replyWaits)}`,
  );
  return {
    updates: all.length,
    lost: all.length - answered,
    mostAnswersOfOne: Math.max(0, ...copies.values()),
    duplicatesPerKill,
    duplicatesWithoutKill: duplicatesByRun[kills] ?? 0,
    duplicateLeadsMs: leads.flat(),
    repliedDuplicatesPerKill: replyWaits.map((l) => l.length),
    triggerDuplicatesPerKill,
    unrecordedReplyMs: replyWaits.flat(),
    chatsInFlightPerKill,
    answersPerSecondAtKill,
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

/** "12 to −3 ms": the widest and narrowest windows the duplicates fell into. */
function leadRange(leads: readonly number[]): string {
  if (leads.length === 0) return "—";
  return `${Math.round(Math.max(...leads))} to ${Math.round(Math.min(...leads))} ms`;
}

const CHATS = 100;
const MESSAGES_PER_CHAT = 10;
const MODEL_DELAY_MS = 300;
const KILLS = 8;

/** The kill that comes as an answer arrives, and the one that comes at a random moment. */
const KILL_MODES = ["arrival", "random"] as const;

/**
 * `npm run bench kill`: duplicates per kill -9 with 100 chats in flight, on each database, with
 * kills as an answer arrives and at random moments.
 */
export async function killUnderLoadBenchmark(options: DatabaseBenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const database of options.databases) {
    for (const killAt of KILL_MODES) {
      const result = await runKillUnderLoad({
        database,
        postgresUrl: options.postgresUrl,
        chats: CHATS,
        messagesPerChat: MESSAGES_PER_CHAT,
        modelDelayMs: MODEL_DELAY_MS,
        kills: KILLS,
        killAt,
        progress: options.progress,
      });
      rows.push(...killRows(database, killAt, result));
    }
  }
  return rows;
}

function killRows(
  database: DatabaseKind,
  killAt: (typeof KILL_MODES)[number],
  result: KillUnderLoadResult,
): BenchRow[] {
  const kase = `${CHATS} chats × ${MESSAGES_PER_CHAT} messages, ${MODEL_DELAY_MS / 2}–${(MODEL_DELAY_MS * 3) / 2} ms model, ${KILLS} × kill -9 ${killAt === "arrival" ? "as an answer arrives" : "at random moments"}`;
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
  const total = sum(result.duplicatesPerKill);
  const kills = result.duplicatesPerKill.length;
  const worst = Math.max(0, ...result.duplicatesPerKill);
  const rate = result.answersPerSecondAtKill;
  const replied = result.repliedDuplicatesPerKill;
  const triggers = sum(result.triggerDuplicatesPerKill);
  const onTheWire = result.duplicatesPerKill.map(
    (n, i) => n - (replied[i] ?? 0) - (result.triggerDuplicatesPerKill[i] ?? 0),
  );
  const row = (fields: Omit<BenchRow, "benchmark" | "database" | "case">): BenchRow => ({
    benchmark: "kill-under-load",
    database,
    case: kase,
    ...fields,
  });
  return [
    row({
      metric: "duplicates per kill (worst)",
      value: worst,
      unit: "answers",
      target: "≤ 1",
      ok: worst <= 1 && kills === KILLS,
      note: `${total} over ${kills} kills: ${result.duplicatesPerKill.join(", ")}; ${result.duplicatesWithoutKill} without a kill`,
    }),
    row({
      metric: "duplicates per kill (mean)",
      value: round(total / Math.max(1, kills), 2),
      unit: "answers",
      note: `answers reaching Telegram at the kills: ${Math.min(...rate)}–${Math.max(...rate)}/s; chats in flight: ${Math.min(...result.chatsInFlightPerKill)}–${Math.max(...result.chatsInFlightPerKill)}; the duplicates' earlier copies reached Telegram ${leadRange(result.duplicateLeadsMs)} before their kill`,
    }),
    row({
      metric: "duplicates: the answer that set off the kill",
      value: triggers,
      unit: "answers",
      note: "the kill came as it reached Telegram: sent again by construction",
    }),
    row({
      metric: "duplicates: other messages on the wire",
      value: sum(onTheWire),
      unit: "answers",
      note: `${onTheWire.join(", ")}: Telegram had not answered them at the kill (or read them after it); no record can save them`,
    }),
    row({
      metric: "duplicates: replied to, not recorded",
      value: sum(replied),
      unit: "answers",
      note: `${replied.join(", ")}: Telegram had sent its reply ${leadRange(result.unrecordedReplyMs)} before the kill, and the service had not recorded it`,
    }),
    row({
      metric: "lost",
      value: result.lost,
      unit: "updates",
      target: "0",
      ok: result.lost === 0,
    }),
  ];
}
