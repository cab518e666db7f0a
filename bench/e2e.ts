import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseKind } from "../src/db/connect.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { type ChatDriver, createChatDriver } from "./chat-driver.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { type Delivery, deliveryBetween, deliveryRow } from "./delivery.js";
import { type Fakes, startFakes } from "./fakes.js";
import type { BenchRow } from "./run.js";
import {
  type CpuTime,
  profileArgs,
  type ServiceProcess,
  START_COMMAND,
  serviceEnv,
  startService,
} from "./service-process.js";
import { round, summarize } from "./stats.js";

export type E2eBenchOptions = DatabaseBenchOptions & {
  /** When set, each service process writes a V8 CPU profile here (slower: not for the numbers). */
  cpuProfileDir?: string;
};

const BENCHMARK = "e2e";
const FIRST_USER_ID = 1_000_001;
const CONCURRENT_CHATS = 200;
const CONCURRENT_RUNS = 3;
/** Compaction is off, so a conversation's context grows to 2 × turnsPerChat events. */
const TURNS_PER_CHAT = 20;
/** The last turns of each conversation, where its context is largest. */
const LATE_TURNS = 5;
/** The cold rows: how a service does right after it started. */
const COLD_TURNS = 1_000;
/**
 * Turns a fresh service runs, in chats of their own, before anything is timed. V8 goes on
 * optimising a turn's code for thousands of turns: one chat's p50 went 3.3 → 2.3 → 2.0 ms over
 * the first three 500-turn windows and settled at 1.4–2.0 after 3,000 turns, while the compiler
 * threads' CPU per turn fell from 1.2 ms to under 0.1; 200 chats ran 580 turns/s over their first
 * 4,000 turns and 870–970 once 12,000 had run. The targets are for a service that has been
 * running, so the timed turns come after these; the first turns are reported as the cold rows.
 */
const WARMUP_TURNS = { sequential: 4_000, concurrent: 12_000 } as const;
/** PostgreSQL times fewer turns, which keeps the whole `npm run bench` within its minutes. */
const VOLUME: Record<DatabaseKind, { timedChats: number; concurrentTurns: number }> = {
  sqlite: { timedChats: 50, concurrentTurns: TURNS_PER_CHAT },
  postgres: { timedChats: 20, concurrentTurns: TURNS_PER_CHAT / 2 },
};
/** The targets hold for SQLite on 2 cores; PostgreSQL is reported for comparison. */
const TARGETS = { p50Ms: 2.5, p99Ms: 8, turnsPerSecond: 800 } as const;

const userIds = (count: number) => Array.from({ length: count }, (_, i) => FIRST_USER_ID + i);
const count = (n: number) => n.toLocaleString("en-US");

type Timed = {
  latencies: number[];
  /** Latencies of each conversation's last LATE_TURNS turns. */
  late: number[];
  elapsedMs: number;
  errors: string[];
};

const emptyTimed = (): Timed => ({ latencies: [], late: [], elapsedMs: 0, errors: [] });

type Measured = Timed & { cpu: CpuTime; geminiMs: number[] };

/** A row before it is told which benchmark, database and case it belongs to. */
type Row = Omit<BenchRow, "benchmark" | "database" | "case">;

type BenchCase = {
  name: string;
  /**
   * Timed runs of the case, one after another on the same warmed-up service, each with chats of
   * its own. The host's speed drifts from one run to the next, so the rows are those of the run
   * with the median throughput.
   */
  runs: number;
  users: number;
  /** Every turn the case posts, warm-up included: the answers the fake Telegram must get. */
  turnsPosted: number;
  /** Brings a fresh service to its steady state; returns the timings of its first turns. */
  warmup(driver: ChatDriver): Promise<Timed>;
  /** Untimed turns that set up a run. */
  prepare(driver: ChatDriver, run: number): Promise<void>;
  timed(driver: ChatDriver, run: number): Promise<Timed>;
  /** `throughputs`: turns per second of every run, the reported one among them. */
  rows(measured: Measured, throughputs: readonly number[], cold: Timed): Row[];
};

const throughputOf = ({ latencies, elapsedMs }: Timed): number =>
  (latencies.length / elapsedMs) * 1_000;

/** One conversation of `turns` turns, each message sent when the previous answer arrived. */
async function converse(driver: ChatDriver, chat: number, turns: number, timed: Timed) {
  for (let t = 0; t < turns; t++) {
    const latency = await driver.turn(chat);
    timed.latencies.push(latency);
    if (t >= turns - LATE_TURNS) timed.late.push(latency);
  }
}

/** Times `run`, which drives conversations that record into the Timed it is given. */
async function timing(run: (timed: Timed) => Promise<void>): Promise<Timed> {
  const timed = emptyTimed();
  const start = performance.now();
  await run(timed);
  timed.elapsedMs = performance.now() - start;
  return timed;
}

/** A conversation at a time, a turn at a time: the latency of one turn with nothing else running. */
function sequentialCase(database: DatabaseKind): BenchCase {
  const { timedChats } = VOLUME[database];
  const turns = TURNS_PER_CHAT;
  const warmupChats = WARMUP_TURNS.sequential / turns;
  const users = userIds(warmupChats + timedChats);
  const targets = database === "sqlite";
  const oneByOne = (driver: ChatDriver, chats: readonly number[]) => async (timed: Timed) => {
    for (const chat of chats) await converse(driver, chat, turns, timed);
  };
  return {
    name: "1 chat",
    runs: 1,
    users: users.length,
    turnsPosted: users.length * turns,
    warmup: (driver) => timing(oneByOne(driver, users.slice(0, warmupChats))),
    prepare: async () => {},
    timed: (driver) => timing(oneByOne(driver, users.slice(warmupChats))),
    rows(measured, _throughputs, cold) {
      const { latencies, late, geminiMs } = measured;
      const all = summarize(latencies);
      const first = summarize(cold.latencies.slice(0, COLD_TURNS));
      return [
        {
          metric: "latency p50",
          value: round(all.p50),
          unit: "ms",
          ...(targets ? { target: `< ${TARGETS.p50Ms} ms`, ok: all.p50 < TARGETS.p50Ms } : {}),
          note: `webhook POST → sendMessage at the fake Telegram; ${count(latencies.length)} turns one after another: ${timedChats} conversations of ${turns} (context 1–${2 * turns} events), after ${count(WARMUP_TURNS.sequential)} warm-up turns`,
        },
        {
          metric: "latency p99",
          value: round(all.p99),
          unit: "ms",
          ...(targets ? { target: `< ${TARGETS.p99Ms} ms`, ok: all.p99 < TARGETS.p99Ms } : {}),
        },
        { metric: "latency max", value: round(all.max), unit: "ms" },
        {
          metric: `latency p50, last ${LATE_TURNS} turns`,
          value: round(summarize(late).p50),
          unit: "ms",
          note: `turns ${turns - LATE_TURNS + 1}–${turns} of each conversation (context ${2 * (turns - LATE_TURNS) + 1}–${2 * turns} events): growth with the context`,
        },
        {
          metric: "fake Gemini time p50",
          value: round(summarize(geminiMs).p50),
          unit: "ms",
          note: "inside the latency: a request's time in the fake Gemini (JSON parse, strict validation, answer)",
        },
        { metric: "throughput", value: round(throughputOf(measured), 1), unit: "turns/s" },
        {
          metric: "cold latency p50",
          value: round(first.p50),
          unit: "ms",
          note: `the first ${count(COLD_TURNS)} turns after the service started, while V8 still optimises`,
        },
        { metric: "cold latency p99", value: round(first.p99), unit: "ms" },
      ];
    },
  };
}

/** Many chats at once, each sending its next message when its previous answer arrived. */
function concurrentCase(database: DatabaseKind): BenchCase {
  const turns = VOLUME[database].concurrentTurns;
  const turnsPerGroup = CONCURRENT_CHATS * turns;
  const warmupGroups = Math.ceil(WARMUP_TURNS.concurrent / turnsPerGroup);
  const users = userIds(CONCURRENT_CHATS * (warmupGroups + CONCURRENT_RUNS));
  /** Group `g` of chats: the warm-up uses the first ones, each timed run one after them. */
  const group = (g: number) => users.slice(g * CONCURRENT_CHATS, (g + 1) * CONCURRENT_CHATS);
  const targets = database === "sqlite";
  const together = (driver: ChatDriver, chats: readonly number[]) => (timed: Timed) =>
    Promise.all(
      chats.map((chat) =>
        converse(driver, chat, turns, timed).catch((error: unknown) => {
          timed.errors.push(error instanceof Error ? error.message : String(error));
        }),
      ),
    ).then(() => {});
  return {
    name: `${CONCURRENT_CHATS} chats`,
    runs: CONCURRENT_RUNS,
    users: users.length,
    turnsPosted:
      turnsPerGroup * warmupGroups + (turnsPerGroup + CONCURRENT_CHATS) * CONCURRENT_RUNS,
    async warmup(driver) {
      const warmGroup = async (g: number) => {
        const timed = await timing(together(driver, group(g)));
        // The timed runs would then measure a service that is failing: stop here instead.
        if (timed.errors[0] !== undefined) throw new Error(`warm-up failed: ${timed.errors[0]}`);
        return timed;
      };
      const cold = await warmGroup(0);
      for (let g = 1; g < warmupGroups; g++) await warmGroup(g);
      return cold;
    },
    // Each chat's first turn reads its (empty) history; the timed turns are its next ones.
    prepare: (driver, run) =>
      Promise.all(group(warmupGroups + run).map((chat) => driver.turn(chat))).then(() => {}),
    timed: (driver, run) => timing(together(driver, group(warmupGroups + run))),
    rows(measured, throughputs, cold) {
      const { latencies, errors } = measured;
      const all = summarize(latencies);
      const perSecond = throughputOf(measured);
      const target = TARGETS.turnsPerSecond;
      const each = [...throughputs].sort((a, b) => a - b).map((t) => round(t, 1));
      return [
        {
          metric: "throughput",
          value: round(perSecond, 1),
          unit: "turns/s",
          ...(targets ? { target: `≥ ${target} turns/s`, ok: perSecond >= target } : {}),
          note: `median of ${each.length} runs (${each.join(", ")}) one after another on a service that had run ${count(warmupGroups * turnsPerGroup)} warm-up turns: ${count(turnsPerGroup)} turns each, ${CONCURRENT_CHATS} chats × ${turns}, each chat's next message after its answer, after 1 untimed turn per chat`,
        },
        { metric: "latency p50", value: round(all.p50), unit: "ms" },
        { metric: "latency p99", value: round(all.p99), unit: "ms" },
        {
          metric: "answers received",
          value: latencies.length,
          unit: "",
          target: `${count(turnsPerGroup)}, each once`,
          ok: latencies.length === turnsPerGroup && errors.length === 0,
          ...(errors[0] === undefined
            ? {}
            : { note: `${errors.length} chat(s) stopped early; first: ${errors[0]}` }),
        },
        {
          metric: "cold throughput",
          value: round(throughputOf(cold), 1),
          unit: "turns/s",
          note: `the first ${count(cold.latencies.length)} turns after the service started, while V8 still optimises`,
        },
      ];
    },
  };
}

/** The service's own CPU time per turn: what bounds its throughput on its one main thread. */
function cpuRow({ latencies, cpu }: Measured): Row {
  const perTurn = (cpu.userMs + cpu.systemMs) / latencies.length;
  return {
    metric: "service CPU per turn",
    value: round(perTurn),
    unit: "ms",
    note: `user ${round(cpu.userMs / latencies.length)} + system ${round(cpu.systemMs / latencies.length)} ms (/proc, 10 ms ticks): one core runs at most ${Math.round(1_000 / perTurn)} turns/s`,
  };
}

function cpuSince(service: ServiceProcess, before: CpuTime): CpuTime {
  const now = service.cpuTime();
  return { userMs: now.userMs - before.userMs, systemMs: now.systemMs - before.systemMs };
}

type Measurements = { cold: Timed; runs: Measured[]; driver: ChatDriver };

/** Warms the service up, then times the case's runs one after another. */
async function measure(
  fakes: Fakes,
  service: ServiceProcess,
  benchCase: BenchCase,
  progress: (step: string) => void,
): Promise<Measurements> {
  const driver = createChatDriver(fakes, service.baseUrl);
  try {
    progress("warm-up");
    const cold = await benchCase.warmup(driver);
    const runs: Measured[] = [];
    for (let run = 0; run < benchCase.runs; run++) {
      if (benchCase.runs > 1) progress(`run ${run + 1} of ${benchCase.runs}`);
      await benchCase.prepare(driver, run);
      // Clears the Gemini timings so far.
      fakes.stats();
      const cpuBefore = service.cpuTime();
      const timed = await benchCase.timed(driver, run);
      const cpu = cpuSince(service, cpuBefore);
      runs.push({ ...timed, cpu, geminiMs: fakes.stats().geminiMs });
    }
    return { cold, runs, driver };
  } finally {
    driver.close();
  }
}

/** Runs a case on a fresh service and database. */
async function measureCase(
  fakes: Fakes,
  database: DatabaseKind,
  benchCase: BenchCase,
  options: E2eBenchOptions,
): Promise<{ cold: Timed; runs: Measured[]; delivery: Delivery }> {
  const bench = await createBenchDatabase(database, options.postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-e2e-"));
  const name = `e2e-${database}-${benchCase.name.replace(/\s+/g, "-")}`;
  try {
    const env = serviceEnv({
      fakes,
      database: bench.target,
      port: await freePort(),
      allowedUserIds: userIds(benchCase.users),
      dataDir,
    });
    const nodeArgs = [...START_COMMAND.nodeArgs, ...profileArgs(options.cpuProfileDir, name)];
    const before = fakes.stats();
    const service = await startService({ env, fakes, nodeArgs });
    try {
      const progress = (step: string) =>
        options.progress?.(`e2e: ${database}, ${benchCase.name}: ${step}`);
      const { cold, runs, driver } = await measure(fakes, service, benchCase, progress);
      // A graceful stop lets every running turn finish, so a late duplicate would be counted.
      await service.stop();
      const after = fakes.stats();
      const delivery = deliveryBetween(before, after, benchCase.turnsPosted, driver.counts);
      return { cold, runs, delivery };
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await bench.dispose();
  }
}

async function runCase(
  fakes: Fakes,
  database: DatabaseKind,
  benchCase: BenchCase,
  options: E2eBenchOptions,
): Promise<BenchRow[]> {
  const { cold, runs, delivery } = await measureCase(fakes, database, benchCase, options);
  const throughputs = runs.map(throughputOf);
  const median = [...throughputs].sort((a, b) => a - b)[Math.floor((runs.length - 1) / 2)];
  const measured = runs[throughputs.indexOf(median as number)] as Measured;
  const where = { benchmark: BENCHMARK, database, case: benchCase.name };
  const rows = [...benchCase.rows(measured, throughputs, cold), cpuRow(measured)];
  return [...rows.map((row) => ({ ...where, ...row })), deliveryRow(where, delivery)];
}

/**
 * The whole path of a message: webhook POST → inbox → agent turn (store, Gemini) → sendMessage,
 * against a zero-latency fake Gemini answering "ok" and the fake Telegram, both in this process
 * (see bench/fakes.ts), the service in its own.
 */
export async function e2eBenchmark(options: E2eBenchOptions): Promise<BenchRow[]> {
  const fakes = await startFakes();
  try {
    const rows: BenchRow[] = [];
    for (const database of options.databases) {
      for (const benchCase of [sequentialCase(database), concurrentCase(database)]) {
        rows.push(...(await runCase(fakes, database, benchCase, options)));
      }
    }
    return rows;
  } finally {
    await fakes.close();
  }
}
