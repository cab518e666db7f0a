import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseKind } from "../src/db/connect.js";
import { type ChatDriver, createChatDriver } from "./chat-driver.js";
import { BENCH_DATABASES, createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { type Delivery, deliveryBetween, deliveryRow, totalDelivery } from "./delivery.js";
import { type Fakes, startFakes } from "./fakes.js";
import type { BenchRow } from "./run.js";
import {
  type CpuTime,
  freePort,
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
/** PostgreSQL runs fewer turns, which keeps the whole `npm run bench` within its few minutes. */
const VOLUME: Record<
  DatabaseKind,
  { warmupChats: number; timedChats: number; concurrentTurns: number }
> = {
  sqlite: { warmupChats: 10, timedChats: 50, concurrentTurns: TURNS_PER_CHAT },
  postgres: { warmupChats: 5, timedChats: 20, concurrentTurns: TURNS_PER_CHAT / 2 },
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

type Measured = Timed & { cpu: CpuTime; geminiMs: number[] };

/** A row before it is told which benchmark, database and case it belongs to. */
type Row = Omit<BenchRow, "benchmark" | "database" | "case">;

type BenchCase = {
  name: string;
  /**
   * Runs of the case, each on a fresh service and database. The host's speed drifts from one run
   * to the next, so the rows are those of the run with the median throughput.
   */
  runs: number;
  users: number;
  /** Every turn the case posts, warm-up included: the answers the fake Telegram must get. */
  turnsPosted: number;
  warmup(driver: ChatDriver): Promise<void>;
  timed(driver: ChatDriver): Promise<Timed>;
  /** `throughputs`: turns per second of every run, the reported one among them. */
  rows(measured: Measured, throughputs: readonly number[]): Row[];
};

const throughputOf = ({ latencies, elapsedMs }: Timed): number =>
  (latencies.length / elapsedMs) * 1_000;

/** A conversation at a time, a turn at a time: the latency of one turn with nothing else running. */
function sequentialCase(database: DatabaseKind): BenchCase {
  const { warmupChats, timedChats } = VOLUME[database];
  const turns = TURNS_PER_CHAT;
  const users = userIds(warmupChats + timedChats);
  const targets = database === "sqlite";
  const conversation = async (driver: ChatDriver, chat: number, timed: Timed) => {
    for (let t = 0; t < turns; t++) {
      const latency = await driver.turn(chat);
      timed.latencies.push(latency);
      if (t >= turns - LATE_TURNS) timed.late.push(latency);
    }
  };
  return {
    name: "1 chat",
    runs: 1,
    users: users.length,
    turnsPosted: users.length * turns,
    async warmup(driver) {
      const ignored: Timed = { latencies: [], late: [], elapsedMs: 0, errors: [] };
      for (const chat of users.slice(0, warmupChats)) await conversation(driver, chat, ignored);
    },
    async timed(driver) {
      const timed: Timed = { latencies: [], late: [], elapsedMs: 0, errors: [] };
      const start = performance.now();
      for (const chat of users.slice(warmupChats)) await conversation(driver, chat, timed);
      timed.elapsedMs = performance.now() - start;
      return timed;
    },
    rows(measured) {
      const { latencies, late, geminiMs } = measured;
      const all = summarize(latencies);
      return [
        {
          metric: "latency p50",
          value: round(all.p50),
          unit: "ms",
          ...(targets ? { target: `< ${TARGETS.p50Ms} ms`, ok: all.p50 < TARGETS.p50Ms } : {}),
          note: `webhook POST → sendMessage at the fake Telegram; ${count(latencies.length)} turns one after another: ${timedChats} conversations of ${turns} (context 1–${2 * turns} events), after ${count(warmupChats * turns)} warm-up turns`,
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
      ];
    },
  };
}

/** Many chats at once, each sending its next message when its previous answer arrived. */
function concurrentCase(database: DatabaseKind): BenchCase {
  const turns = VOLUME[database].concurrentTurns;
  const users = userIds(CONCURRENT_CHATS);
  const expected = users.length * turns;
  const targets = database === "sqlite";
  return {
    name: `${CONCURRENT_CHATS} chats`,
    runs: CONCURRENT_RUNS,
    users: users.length,
    turnsPosted: users.length * (turns + 1),
    async warmup(driver) {
      await Promise.all(users.map((chat) => driver.turn(chat)));
    },
    async timed(driver) {
      const timed: Timed = { latencies: [], late: [], elapsedMs: 0, errors: [] };
      const conversation = async (chat: number) => {
        try {
          for (let t = 0; t < turns; t++) timed.latencies.push(await driver.turn(chat));
        } catch (error) {
          timed.errors.push(error instanceof Error ? error.message : String(error));
        }
      };
      const start = performance.now();
      await Promise.all(users.map(conversation));
      timed.elapsedMs = performance.now() - start;
      return timed;
    },
    rows(measured, throughputs) {
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
          note: `median of ${each.length} runs (${each.join(", ")}), each on a fresh service: ${count(expected)} turns, ${users.length} chats × ${turns}, each chat's next message after its answer, after 1 warm-up turn per chat`,
        },
        { metric: "latency p50", value: round(all.p50), unit: "ms" },
        { metric: "latency p99", value: round(all.p99), unit: "ms" },
        {
          metric: "answers received",
          value: latencies.length,
          unit: "",
          target: `${count(expected)}, each once`,
          ok: latencies.length === expected && errors.length === 0,
          ...(errors[0] === undefined
            ? {}
            : { note: `${errors.length} chat(s) stopped early; first: ${errors[0]}` }),
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

function profileArgs(dir: string | undefined, name: string): string[] {
  if (dir === undefined) return [];
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`];
}

function cpuSince(service: ServiceProcess, before: CpuTime): CpuTime {
  const now = service.cpuTime();
  return { userMs: now.userMs - before.userMs, systemMs: now.systemMs - before.systemMs };
}

async function measure(
  fakes: Fakes,
  service: ServiceProcess,
  benchCase: BenchCase,
): Promise<{ measured: Measured; driver: ChatDriver }> {
  const driver = createChatDriver(fakes, service.baseUrl);
  try {
    await benchCase.warmup(driver);
    // Clears the warm-up's Gemini timings.
    fakes.stats();
    const cpuBefore = service.cpuTime();
    const timed = await benchCase.timed(driver);
    const cpu = cpuSince(service, cpuBefore);
    const { geminiMs } = fakes.stats();
    return { measured: { ...timed, cpu, geminiMs }, driver };
  } finally {
    driver.close();
  }
}

type Run = { measured: Measured; delivery: Delivery };

async function runOnce(
  fakes: Fakes,
  database: DatabaseKind,
  benchCase: BenchCase,
  options: E2eBenchOptions & { profileName: string },
): Promise<Run> {
  const bench = await createBenchDatabase(database, options.postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-e2e-"));
  try {
    const env = serviceEnv({
      fakes,
      database: bench.target,
      port: await freePort(),
      allowedUserIds: userIds(benchCase.users),
      dataDir,
    });
    const nodeArgs = [
      ...START_COMMAND.nodeArgs,
      ...profileArgs(options.cpuProfileDir, options.profileName),
    ];
    const before = fakes.stats();
    const service = await startService({ env, fakes, nodeArgs });
    try {
      const { measured, driver } = await measure(fakes, service, benchCase);
      // A graceful stop lets every running turn finish, so a late duplicate would be counted.
      await service.stop();
      const after = fakes.stats();
      return {
        measured,
        delivery: deliveryBetween(before, after, benchCase.turnsPosted, driver.counts),
      };
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
  const runs: Run[] = [];
  for (let i = 1; i <= benchCase.runs; i++) {
    const of = benchCase.runs > 1 ? ` (run ${i} of ${benchCase.runs})` : "";
    options.progress?.(`e2e: ${database}, ${benchCase.name}${of}`);
    const profileName = `e2e-${database}-${benchCase.name.replace(/\s+/g, "-")}-${i}`;
    runs.push(await runOnce(fakes, database, benchCase, { ...options, profileName }));
  }
  const byThroughput = [...runs].sort(
    (a, b) => throughputOf(a.measured) - throughputOf(b.measured),
  );
  const { measured } = byThroughput[Math.floor((byThroughput.length - 1) / 2)] as Run;
  const where = { benchmark: BENCHMARK, database, case: benchCase.name };
  const throughputs = runs.map((run) => throughputOf(run.measured));
  const rows = [...benchCase.rows(measured, throughputs), cpuRow(measured)];
  const delivery = totalDelivery(runs.map((run) => run.delivery));
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
    for (const database of BENCH_DATABASES) {
      for (const benchCase of [sequentialCase(database), concurrentCase(database)]) {
        rows.push(...(await runCase(fakes, database, benchCase, options)));
      }
    }
    return rows;
  } finally {
    await fakes.close();
  }
}
