import { sql } from "kysely";
import { type DatabaseHandle, type DatabaseKind, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createLogger, type Logger } from "../src/logger.js";
import { createSessionStore, type SessionStore } from "../src/session/store.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { historyEvent, modelText, userText } from "./history.js";
import type { BenchRow } from "./run.js";
import { round, summarize } from "./stats.js";

export type StorageBenchOptions = DatabaseBenchOptions;

const BENCHMARK = "storage";
const CONTEXT_SIZES = [30, 1_000, 10_000] as const;
const TIMED_TURNS: Record<DatabaseKind, number> = { sqlite: 200, postgres: 100 };
// Lets the JIT settle before the clock starts.
const WARMUP_TURNS = 20;
const COLD_LOADS = 3;
const PREFILL_BATCH = 500;
const ROUND_TRIPS = 200;
/** Store calls one turn makes: append user, load, append model, load. */
const CALLS_PER_TURN = 4;
const TARGET_MS = new Map<number, number>([
  [30, 0.3],
  [10_000, 3],
]);

async function prefill(store: SessionStore, chatId: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += PREFILL_BATCH) {
    const size = Math.min(PREFILL_BATCH, count - start);
    const batch = Array.from({ length: size }, (_, i) => ({ event: historyEvent(start + i) }));
    await store.append(chatId, batch);
  }
}

async function loadExpecting(store: SessionStore, chatId: string, events: number): Promise<void> {
  const context = await store.loadContext(chatId);
  if (context.events.length !== events) {
    throw new Error(
      `Chat ${chatId} loaded ${context.events.length} events, expected ${events}: the session store lost or duplicated events, so the timings would be meaningless.`,
    );
  }
}

async function timeTurn(store: SessionStore, chatId: string, turn: number): Promise<number> {
  const start = performance.now();
  await store.append(chatId, [{ event: userText(turn) }]);
  await store.loadContext(chatId);
  await store.append(chatId, [{ event: modelText(turn), promptTokens: 1_000 + turn }]);
  await store.loadContext(chatId);
  return performance.now() - start;
}

type SizeResult = { size: number; turns: number[]; coldLoads: number[] };

/** The first load of a chat by a fresh store: what the first turn after a restart pays. */
async function timeColdLoad(
  db: DatabaseHandle,
  logger: Logger,
  chatId: string,
  size: number,
): Promise<number> {
  const store = createSessionStore({ db: db.db, logger });
  const start = performance.now();
  await loadExpecting(store, chatId, size);
  return performance.now() - start;
}

async function measureSize(
  db: DatabaseHandle,
  logger: Logger,
  size: number,
  turns: number,
): Promise<SizeResult> {
  const chatId = `bench-${size}`;
  await prefill(createSessionStore({ db: db.db, logger }), chatId, size);
  const coldLoads: number[] = [];
  for (let i = 0; i < COLD_LOADS; i++) coldLoads.push(await timeColdLoad(db, logger, chatId, size));
  const store = createSessionStore({ db: db.db, logger });
  await loadExpecting(store, chatId, size);
  for (let turn = 0; turn < WARMUP_TURNS; turn++) await timeTurn(store, chatId, turn);
  const timings: number[] = [];
  for (let turn = 0; turn < turns; turn++) {
    timings.push(await timeTurn(store, chatId, WARMUP_TURNS + turn));
  }
  await loadExpecting(store, chatId, size + 2 * (WARMUP_TURNS + turns));
  return { size, turns: timings, coldLoads };
}

async function roundTripMs(db: DatabaseHandle): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const start = performance.now();
    await sql`select 1`.execute(db.db);
    times.push(performance.now() - start);
  }
  return summarize(times).p50;
}

function missNote(database: DatabaseKind, roundTrip: number): string | undefined {
  if (database !== "postgres") return undefined;
  const floor = round(CALLS_PER_TURN * roundTrip);
  return `missed on PostgreSQL: a turn makes ${CALLS_PER_TURN} round trips and a bare "select 1" takes ${round(roundTrip)} ms here, so ${floor} ms goes to the network before any work (plus 2 durable commits)`;
}

function rowsFor(database: DatabaseKind, result: SizeResult, roundTrip: number): BenchRow[] {
  const turns = summarize(result.turns);
  const base = {
    benchmark: BENCHMARK,
    database,
    case: `${result.size.toLocaleString("en-US")} events`,
    unit: "ms",
  };
  const targetMs = TARGET_MS.get(result.size);
  const ok = targetMs === undefined ? undefined : turns.mean < targetMs;
  const method = `${result.turns.length} warm turns (append user, load, append model, load); the context grows 2 events a turn`;
  return [
    {
      ...base,
      metric: "turn mean",
      value: round(turns.mean),
      ...(targetMs === undefined ? {} : { target: `< ${targetMs} ms`, ok }),
      note: (ok === false && missNote(database, roundTrip)) || method,
    },
    { ...base, metric: "turn p50", value: round(turns.p50) },
    { ...base, metric: "turn p99", value: round(turns.p99) },
    {
      ...base,
      metric: "cold load",
      value: round(summarize(result.coldLoads).p50),
      note: `first loadContext by a fresh store (a restart), median of ${COLD_LOADS}; may grow with the context`,
    },
  ];
}

function growthRow(database: DatabaseKind, results: readonly SizeResult[]): BenchRow[] {
  const smallest = results[0];
  const largest = results.at(-1);
  if (!smallest || !largest || smallest === largest) return [];
  return [
    {
      benchmark: BENCHMARK,
      database,
      case: `${smallest.size} → ${largest.size.toLocaleString("en-US")} events`,
      metric: "turn p50 growth",
      value: round(summarize(largest.turns).p50 / summarize(smallest.turns).p50),
      unit: "×",
      note: `linear growth would be ${Math.round(largest.size / smallest.size)}×`,
    },
  ];
}

async function benchDatabase(
  database: DatabaseKind,
  options: StorageBenchOptions,
  logger: Logger,
): Promise<BenchRow[]> {
  const bench = await createBenchDatabase(database, options.postgresUrl);
  const db = openDatabase(bench.target);
  try {
    await migrateToLatest(db.db, logger);
    const roundTrip = await roundTripMs(db);
    const rows: BenchRow[] = [
      {
        benchmark: BENCHMARK,
        database,
        case: "-",
        metric: 'round trip "select 1" p50',
        value: round(roundTrip),
        unit: "ms",
      },
    ];
    const results: SizeResult[] = [];
    for (const size of CONTEXT_SIZES) {
      options.progress?.(`storage: ${database}, ${size} events`);
      const result = await measureSize(db, logger, size, TIMED_TURNS[database]);
      results.push(result);
      rows.push(...rowsFor(database, result, roundTrip));
    }
    rows.push(...growthRow(database, results));
    return rows;
  } finally {
    await db.close();
    await bench.dispose();
  }
}

/**
 * Storage overhead of one turn (append the user event, load the context, append the model event,
 * load the context) with warm caches, per context size and database, plus the cold first load.
 */
export async function storageBenchmark(options: StorageBenchOptions): Promise<BenchRow[]> {
  const logger = createLogger({ level: "silent", secrets: [] });
  const rows: BenchRow[] = [];
  for (const database of options.databases)
    rows.push(...(await benchDatabase(database, options, logger)));
  return rows;
}
