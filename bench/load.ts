import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DEFAULT_MAX_CONCURRENT_TURNS } from "../src/config.js";
import type { DatabaseKind } from "../src/db/connect.js";
import { type GenerateBody, type ReplyStep, streamed, text } from "../test/fakes/gemini.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { type ChatDriver, createChatDriver } from "./chat-driver.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { deliveryBetween, deliveryRow } from "./delivery.js";
import { type Fakes, startFakes } from "./fakes.js";
import { type HeapProfileKind, inspectorArgs, startHeapProfile } from "./heap-profile.js";
import { PERF_NODE_ARGS, recordCpu } from "./perf-record.js";
import type { BenchRow } from "./run.js";
import {
  type CpuTime,
  databaseUrl,
  FLOOR_SERVICE_MAIN,
  profileArgs,
  type ServiceProcess,
  START_COMMAND,
  serviceEnv,
  startService,
  WORK_FLOOR_SERVICE_MAIN,
} from "./service-process.js";
import { round, summarize } from "./stats.js";

export type LoadBenchOptions = DatabaseBenchOptions & {
  /** When set, each service process writes a V8 CPU profile here (slower: not for the numbers). */
  cpuProfileDir?: string;
  /** When set, Linux perf records each service's CPU during its burst here (bench/perf-record.ts). */
  perfDir?: string;
  /**
   * When set, V8's sampling heap profiler records each service's heap during its burst into
   * `dir` (bench/heap-profile.ts; through the inspector: slower, not for the numbers).
   */
  heapProfile?: { dir: string; kind: HeapProfileKind };
};

const BENCHMARK = "load";
const FIRST_USER_ID = 3_000_001;

/** A whole number from the environment, for quick runs of a smaller size. */
export function envCount(name: string, fallback: number): number {
  const value = process.env[name]?.trim();
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a whole number ≥ 1, not "${value}"`);
  return n;
}

/** "default,64" → [undefined (the service's default), 64]. */
function envConcurrencies(name: string, fallback: string): (number | undefined)[] {
  const list = process.env[name]?.trim() || fallback;
  return list.split(",").map((word) => {
    const w = word.trim();
    if (w === "default") return undefined;
    const n = Number(w);
    if (!Number.isInteger(n) || n < 1) {
      throw new Error(`${name} takes "default" or whole numbers ≥ 1, comma-separated, not "${w}"`);
    }
    return n;
  });
}

type Mode = "whole" | "streamed";
const MODES: readonly Mode[] = ["whole", "streamed"];

function envModes(name: string): readonly Mode[] {
  const list = process.env[name]?.trim();
  if (!list) return MODES;
  const names = list.split(",").map((word) => word.trim());
  const unknown = names.filter((word) => !(MODES as readonly string[]).includes(word));
  if (unknown.length > 0)
    throw new Error(`${name} takes ${MODES.join(", ")}, not ${unknown.join(", ")}`);
  return MODES.filter((mode) => names.includes(mode));
}

/** Chats that each send one message at once (the issue's burst). */
const CHATS = envCount("BENCH_LOAD_CHATS", 1_000);
/** What the fake Gemini takes per call. */
const MODEL_MS = envCount("BENCH_LOAD_MODEL_MS", 2_000);
/** MAX_CONCURRENT_TURNS of each run: the service's default, and the old fixed 64 to compare. */
const CONCURRENCIES = envConcurrencies("BENCH_LOAD_CONCURRENCY", "default,64");
const RUN_MODES = envModes("BENCH_LOAD_MODES");
/** BENCH_LOAD_FLOOR=0 leaves out the floors' runs (the library floor's, and the work floor's). */
const FLOOR = process.env.BENCH_LOAD_FLOOR?.trim() !== "0";
/** Turns a fresh service runs (model time 0) before the burst, so that V8 has compiled a turn. */
const WARMUP_CHATS = 100;
const WARMUP_TURNS_PER_CHAT = 5;
/** The streamed answer comes in this many chunks, spread evenly over MODEL_MS. */
const CHUNKS = 20;
const SAMPLE_MS = 100;
const TARGETS = { slackMs: 500, rssMb: 250 } as const;
/**
 * The harness (fakes and load generator, in this process) must not be what the wait measures:
 * an event loop stalled longer than this would show in every timestamp the fakes take.
 */
const HARNESS_DELAY_MS = 50;

/** Plain words: its Telegram HTML is the same text, which the driver compares. */
const ANSWER = Array.from(
  { length: 16 },
  (_, i) => `Sentence ${i + 1} of the answer the model writes while the user waits for it`,
).join(" ");

const count = (n: number) => n.toLocaleString("en-US");

/** The fake Gemini's answer: whole after `delayMs`, or streamed in chunks over it. */
function answerStep(mode: Mode, delayMs: number): ReplyStep {
  // Asked for a stream (the service's default), the whole answer still comes as one event.
  if (mode === "whole")
    return { ...streamed(text(ANSWER), { chunkChars: ANSWER.length }), delayMs };
  const pause = delayMs / CHUNKS;
  // The first chunk after one pause, then one per pause: the last comes after delayMs.
  return {
    ...streamed(text(ANSWER), {
      chunkChars: Math.ceil(ANSWER.length / CHUNKS),
      chunkDelayMs: pause,
    }),
    delayMs: pause,
  };
}

type Burst = {
  waits: number[];
  /** Date.now() of each chat's POST, for the first draft's wait. */
  postedAt: Map<number, number>;
  elapsedMs: number;
  errors: string[];
  rssPeakMb: number;
  cpu: CpuTime;
  /** The bench process's own event-loop delay during the burst, ms. */
  harnessDelay: { p99: number; max: number };
  /** The bench process's CPU time during the burst (fakes and load generator), ms. */
  harnessCpuMs: number;
  /** Drafts the fake Telegram had shown before the burst. */
  draftsBefore: number;
  geminiMs: number[];
};

/** Every chat sends one message at once; returns when each has its answer (or failed). */
async function burst(
  fakes: Fakes,
  service: ServiceProcess,
  driver: ChatDriver,
  chats: number[],
): Promise<Burst> {
  fakes.stats();
  let rssPeakMb = service.rssMb();
  const sampler = setInterval(() => {
    rssPeakMb = Math.max(rssPeakMb, service.rssMb());
  }, SAMPLE_MS);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const cpuBefore = service.cpuTime();
  const harnessBefore = process.cpuUsage();
  const draftsBefore = fakes.telegram.drafts.length;
  const waits: number[] = [];
  const errors: string[] = [];
  const postedAt = new Map<number, number>();
  const start = performance.now();
  try {
    await Promise.all(
      chats.map(async (chat) => {
        postedAt.set(chat, Date.now());
        try {
          waits.push(await driver.turn(chat));
        } catch (error) {
          errors.push(error instanceof Error ? error.message : String(error));
        }
      }),
    );
  } finally {
    clearInterval(sampler);
    delay.disable();
  }
  const elapsedMs = performance.now() - start;
  const cpuAfter = service.cpuTime();
  const harness = process.cpuUsage(harnessBefore);
  return {
    harnessCpuMs: (harness.user + harness.system) / 1_000,
    draftsBefore,
    waits,
    postedAt,
    elapsedMs,
    errors,
    rssPeakMb: Math.max(rssPeakMb, service.rssMb()),
    cpu: {
      userMs: cpuAfter.userMs - cpuBefore.userMs,
      systemMs: cpuAfter.systemMs - cpuBefore.systemMs,
    },
    harnessDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
    geminiMs: fakes.stats().geminiMs,
  };
}

/** Brings the fresh service's turn code to V8's optimised tiers: a few turns in other chats. */
async function warmUp(driver: ChatDriver, chats: number[]): Promise<void> {
  await Promise.all(
    chats.map(async (chat) => {
      for (let t = 0; t < WARMUP_TURNS_PER_CHAT; t++) await driver.turn(chat);
    }),
  );
}

/**
 * Koroku on a database; (database "none") the libraries' floor: bench/floor-service.ts, a bot
 * that only streams one Gemini call and sends its answer; or (`workFloor`) that floor doing a
 * Koroku turn's work by hand on the same database (bench/work-floor-service.ts), with the request
 * Koroku sent.
 */
type RunCase = {
  database: DatabaseKind | "none";
  concurrency: number | undefined;
  mode: Mode;
  workFloor?: { requestFile: string };
};

const caseName = ({ database, concurrency, mode, workFloor }: RunCase) =>
  `${count(CHATS)} chats at once, ${MODEL_MS / 1000} s model${mode === "streamed" ? " streaming" : ""}, ${
    database === "none"
      ? "library floor (grammY + @google/genai only)"
      : workFloor
        ? "work floor (the library floor doing a Koroku turn's work by hand)"
        : `MAX_CONCURRENT_TURNS=${concurrency ?? `${DEFAULT_MAX_CONCURRENT_TURNS} (default)`}`
  }`;

function firstDraftWaits(
  fakes: Fakes,
  postedAt: Map<number, number>,
  draftsBefore: number,
): number[] {
  const first = new Map<number, number>();
  for (const draft of fakes.telegram.drafts.slice(draftsBefore)) {
    if (draft.plain_text !== "" && postedAt.has(draft.chat_id) && !first.has(draft.chat_id)) {
      first.set(draft.chat_id, draft.at - (postedAt.get(draft.chat_id) as number));
    }
  }
  return [...first.values()];
}

function rowsOf(
  run: RunCase,
  measured: Burst,
  fakes: Fakes,
): Omit<BenchRow, "benchmark" | "database" | "case">[] {
  const waits = summarize(measured.waits);
  const targetMs = MODEL_MS + TARGETS.slackMs;
  const perSecond = (measured.waits.length / measured.elapsedMs) * 1_000;
  const overrun = summarize(measured.geminiMs.map((ms) => ms - MODEL_MS));
  const cpuMs = measured.cpu.userMs + measured.cpu.systemMs;
  const harnessOk = measured.harnessDelay.p99 < HARNESS_DELAY_MS;
  const rows: Omit<BenchRow, "benchmark" | "database" | "case">[] = [
    {
      metric: "wait p50",
      value: round(waits.p50, 0),
      unit: "ms",
      note: "webhook POST → the answer's sendMessage at the fake Telegram",
    },
    {
      metric: "wait p99",
      value: round(waits.p99, 0),
      unit: "ms",
      target: `≤ ${targetMs} ms (model + ${TARGETS.slackMs})`,
      ok: waits.p99 <= targetMs && measured.errors.length === 0,
      note: `max ${round(waits.max, 0)} ms; ${count(measured.waits.length)} of ${count(CHATS)} answered${measured.errors[0] === undefined ? "" : `; first failure: ${measured.errors[0]}`}`,
    },
    {
      metric: "throughput",
      value: round(perSecond, 1),
      unit: "turns/s",
      note: `${count(measured.waits.length)} answers in ${round(measured.elapsedMs / 1000, 2)} s from the first POST`,
    },
    {
      metric: "RSS peak",
      value: round(measured.rssPeakMb, 1),
      unit: "MB",
      target: `< ${TARGETS.rssMb} MB`,
      ok: measured.rssPeakMb < TARGETS.rssMb,
      note: `npm start's settings; /proc VmRSS sampled every ${SAMPLE_MS} ms`,
    },
    {
      metric: "service CPU per turn",
      value: round(cpuMs / Math.max(1, measured.waits.length), 2),
      unit: "ms",
      note: `${round(cpuMs / 1000, 2)} s of CPU over the burst`,
    },
    {
      metric: "harness event-loop delay p99",
      value: round(measured.harnessDelay.p99, 1),
      unit: "ms",
      target: `< ${HARNESS_DELAY_MS} ms`,
      ok: harnessOk,
      note: `max ${round(measured.harnessDelay.max, 1)} ms, ${round(measured.harnessCpuMs / 1000, 2)} s of CPU: the fakes and load generator (this process) were ${harnessOk ? "not " : ""}the bottleneck; the fake Gemini answered ${round(overrun.p99, 0)} ms late at p99 (max ${round(overrun.max, 0)})`,
    },
  ];
  // The floor shows no drafts: it sends its answer once Gemini's stream has ended.
  if (run.mode === "streamed" && run.database !== "none") {
    const drafts = summarize(firstDraftWaits(fakes, measured.postedAt, measured.draftsBefore));
    rows.push({
      metric: "first draft p50",
      value: round(drafts.p50, 0),
      unit: "ms",
      note: `webhook POST → first text shown (sendMessageDraft); p99 ${round(drafts.p99, 0)} ms; ${round((fakes.telegram.drafts.length - measured.draftsBefore) / Math.max(1, measured.waits.length), 1)} drafts a turn`,
    });
  }
  return rows;
}

/** The last turn request Koroku sent, which the work floor sends again with its own contents. */
type Sent = { koroku?: GenerateBody };

async function runOne(
  fakes: Fakes,
  run: RunCase,
  options: LoadBenchOptions,
  sent: Sent,
): Promise<BenchRow[]> {
  // The floor keeps nothing: any database will do for the environment it ignores.
  const bench = await createBenchDatabase(
    run.database === "none" ? "sqlite" : run.database,
    options.postgresUrl,
  );
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-load-"));
  const warmupChats = Array.from({ length: WARMUP_CHATS }, (_, i) => FIRST_USER_ID + i);
  const chats = Array.from({ length: CHATS }, (_, i) => FIRST_USER_ID + WARMUP_CHATS + i);
  const where = { benchmark: BENCHMARK, database: run.database, case: caseName(run) };
  let modelMs = 0;
  fakes.gemini.setDefault((request) => {
    if (run.database !== "none" && !run.workFloor && request.model === "chat-model") {
      sent.koroku = request.body;
    }
    return answerStep(run.mode, modelMs);
  });
  try {
    const env = serviceEnv({
      fakes,
      database: bench.target,
      port: await freePort(),
      allowedUserIds: [...warmupChats, ...chats],
      dataDir,
    });
    if (run.concurrency !== undefined) env.MAX_CONCURRENT_TURNS = String(run.concurrency);
    if (run.workFloor) {
      env.WORK_FLOOR_REQUEST = run.workFloor.requestFile;
      env.WORK_FLOOR_DATABASE =
        bench.target.kind === "postgres"
          ? databaseUrl(bench.target)
          : join(dataDir, "work-floor.db");
    }
    const before = fakes.stats();
    const drafts429 = before.totals.telegram429s;
    const name = `load-${run.workFloor ? `work-floor-${run.database}` : run.database}-${run.mode}-${run.concurrency ?? "default"}`;
    const heapProfile = options.heapProfile && { ...options.heapProfile, port: await freePort() };
    const nodeArgs = [
      ...START_COMMAND.nodeArgs,
      ...profileArgs(options.cpuProfileDir, name),
      ...(options.perfDir === undefined ? [] : PERF_NODE_ARGS),
      ...(heapProfile ? inspectorArgs(heapProfile.port) : []),
    ];
    const service = await startService({
      env,
      fakes,
      nodeArgs,
      ...(run.database === "none" ? { main: FLOOR_SERVICE_MAIN } : {}),
      ...(run.workFloor ? { main: WORK_FLOOR_SERVICE_MAIN } : {}),
    });
    // Each turn waits at most for every turn ahead of it, and then some.
    const answerTimeoutMs =
      60_000 + 2 * MODEL_MS * Math.ceil(CHATS / (run.concurrency ?? DEFAULT_MAX_CONCURRENT_TURNS));
    const driver = createChatDriver(fakes, service.baseUrl, {
      expectedAnswer: ANSWER,
      answerTimeoutMs,
    });
    try {
      options.progress?.(`${BENCHMARK}: ${run.database}, ${where.case}: warm-up`);
      await warmUp(driver, warmupChats);
      modelMs = MODEL_MS;
      options.progress?.(`${BENCHMARK}: ${run.database}, ${where.case}: the burst`);
      const perf =
        options.perfDir === undefined
          ? undefined
          : recordCpu(service.pid, join(options.perfDir, `${name}.perf.data`));
      const heap = heapProfile && {
        dir: heapProfile.dir,
        profile: await startHeapProfile(heapProfile.port, heapProfile.kind),
      };
      const measured = await burst(fakes, service, driver, chats);
      await perf?.stop();
      await heap?.profile.stop(join(heap.dir, `${name}.heapprofile`));
      const rows = rowsOf(run, measured, fakes);
      // A graceful stop lets every running turn finish, so a late duplicate would be counted.
      await service.stop();
      const after = fakes.stats();
      const turns = WARMUP_CHATS * WARMUP_TURNS_PER_CHAT + CHATS;
      const delivery = deliveryBetween(before, after, turns, driver.counts);
      const tooMany = after.totals.telegram429s - drafts429;
      return [
        ...rows.map((row) => ({ ...where, ...row })),
        deliveryRow(where, delivery),
        {
          ...where,
          metric: "429 answers from Telegram",
          value: tooMany,
          unit: "calls",
          note: "drafts over the fake's 5 per second per chat, warm-up included",
        },
      ];
    } finally {
      driver.close();
      await service.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await bench.dispose();
  }
}

/** A run and the rows it gave. */
type Ran = { run: RunCase; rows: BenchRow[] };

const CPU_METRIC = "service CPU per turn";
/** Issue 32: Koroku's CPU a turn at most this many times the library floor's, in the same run. */
const FLOOR_RATIO_TARGET = 1.5;

/**
 * Each run's CPU a turn against the floors' in this run, with the same answers: the host's speed
 * moves by a fifth between runs, so only runs side by side compare.
 */
function againstTheFloors(runs: readonly Ran[]): BenchRow[] {
  const cpuOf = (ran: Ran | undefined) => ran?.rows.find((r) => r.metric === CPU_METRIC)?.value;
  const rows: BenchRow[] = [];
  for (const ran of runs) {
    const { run } = ran;
    if (run.database === "none") continue;
    const cpu = cpuOf(ran);
    const floor = cpuOf(runs.find((r) => r.run.database === "none" && r.run.mode === run.mode));
    const work = cpuOf(
      runs.find(
        (r) => r.run.workFloor && r.run.mode === run.mode && r.run.database === run.database,
      ),
    );
    const where = { benchmark: BENCHMARK, database: run.database, case: caseName(run) };
    if (cpu === undefined) continue;
    if (floor !== undefined) {
      const ratio = cpu / floor;
      rows.push({
        ...where,
        metric: "CPU per turn to the library floor",
        value: round(ratio, 2),
        unit: "times",
        ...(run.workFloor
          ? {}
          : { target: `≤ ${FLOOR_RATIO_TARGET}`, ok: ratio <= FLOOR_RATIO_TARGET }),
        note: `${cpu} ms a turn against the library floor's ${floor} ms in this run`,
      });
    }
    if (work !== undefined && !run.workFloor) {
      rows.push({
        ...where,
        metric: "CPU per turn to the work floor",
        value: round(cpu / work, 2),
        unit: "times",
        note: `${cpu} ms a turn against the work floor's ${work} ms in this run`,
      });
    }
  }
  return rows;
}

/** Koroku's last turn request without its contents, for the work floor to send the same. */
function requestShape(sent: Sent): Omit<GenerateBody, "contents"> {
  if (sent.koroku === undefined)
    throw new Error("load bench: Koroku sent no request to copy for the work floor");
  const { contents: _contents, ...shape } = sent.koroku;
  return shape;
}

/**
 * What users wait for with a real model: a fake Gemini that takes MODEL_MS per call (answering
 * whole, or streaming over that time), and CHATS chats that each send one message at once through
 * the webhook, with the service in its own process as `npm start` runs it.
 */
export async function loadBenchmark(options: LoadBenchOptions): Promise<BenchRow[]> {
  if (options.perfDir !== undefined) mkdirSync(options.perfDir, { recursive: true });
  if (options.heapProfile !== undefined) mkdirSync(options.heapProfile.dir, { recursive: true });
  const fakes = await startFakes();
  try {
    const rows: BenchRow[] = [];
    const sent: Sent = {};
    const runs: Ran[] = [];
    const run = async (runCase: RunCase) => {
      const ran = await runOne(fakes, runCase, options, sent);
      runs.push({ run: runCase, rows: ran });
      rows.push(...ran);
    };
    if (FLOOR) {
      for (const mode of RUN_MODES) await run({ database: "none", concurrency: undefined, mode });
    }
    for (const database of options.databases) {
      for (const concurrency of CONCURRENCIES) {
        for (const mode of RUN_MODES) await run({ database, concurrency, mode });
      }
    }
    if (FLOOR) {
      const requestFile = join(
        mkdtempSync(join(tmpdir(), "koroku-bench-work-floor-")),
        "request.json",
      );
      writeFileSync(requestFile, JSON.stringify(requestShape(sent)));
      try {
        for (const database of options.databases) {
          for (const mode of RUN_MODES) {
            await run({ database, concurrency: undefined, mode, workFloor: { requestFile } });
          }
        }
      } finally {
        rmSync(dirname(requestFile), { recursive: true, force: true });
      }
    }
    return [...rows, ...againstTheFloors(runs)];
  } finally {
    await fakes.close();
  }
}
