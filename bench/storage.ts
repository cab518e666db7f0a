import { sql } from "kysely";
import type { DatabaseTarget } from "../src/config.js";
import { type DatabaseHandle, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createLogger, type Logger } from "../src/logger.js";
import type { SessionEvent } from "../src/session/events.js";
import { createSessionStore, type SessionStore } from "../src/session/store.js";
import { createBenchDatabase } from "./databases.js";
import type { BenchRow } from "./run.js";

type DatabaseKind = DatabaseTarget["kind"];

export type StorageBenchOptions = {
  postgresUrl: string;
  /** Progress lines, so a long run visibly moves. */
  progress?: (line: string) => void;
};

const BENCHMARK = "storage";
const DATABASES: readonly DatabaseKind[] = ["sqlite", "postgres"];
const CONTEXT_SIZES = [30, 1_000, 10_000] as const;
const TIMED_TURNS: Record<DatabaseKind, number> = { sqlite: 200, postgres: 100 };
// Lets the JIT settle and the statement caches fill before the clock starts.
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

// Real thought signatures are opaque base64 blobs of a few hundred bytes.
const SIGNATURE = Buffer.from(Array.from({ length: 384 }, (_, i) => (i * 73 + 19) % 256)).toString(
  "base64",
);
const WORDS =
  "the agent keeps every event of the chat in sql and reads back only what changed since the last turn so a long conversation stays cheap".split(
    " ",
  );

function prose(seed: number, length: number): string {
  let out = "";
  for (let i = seed; out.length < length; i++) out += `${WORDS[(i * 7) % WORDS.length]} `;
  return out.slice(0, length);
}

const session = (role: "user" | "model", parts: SessionEvent["parts"]): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts,
});

const userText = (turn: number) =>
  session("user", [{ kind: "text", text: prose(turn, 60 + (turn % 5) * 30) }]);

const modelText = (turn: number) =>
  session("model", [
    { kind: "text", text: prose(turn + 3, 150 + (turn % 7) * 40), thoughtSignature: SIGNATURE },
  ]);

function toolExchange(turn: number): SessionEvent[] {
  const id = `call-${turn}`;
  const args = { path: `notes/day-${turn % 365}.md`, maxBytes: 4096 };
  return [
    session("model", [
      { kind: "function_call", name: "read_file", args, id, thoughtSignature: SIGNATURE },
    ]),
    session("user", [
      {
        kind: "function_response",
        name: "read_file",
        id,
        response: { output: prose(turn + 11, 200 + ((turn * 137) % 300)) },
        call: { name: "read_file", args },
      },
    ]),
  ];
}

/** The i-th event of a history made of turns: user text, tool call, tool result, model answer. */
function historyEvent(index: number): SessionEvent {
  const turn = Math.floor(index / 4);
  const step = index % 4;
  if (step === 0) return userText(turn);
  if (step === 3) return modelText(turn);
  return toolExchange(turn)[step - 1] as SessionEvent;
}

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

function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

const mean = (values: readonly number[]) =>
  values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);

const round = (value: number) => Math.round(value * 1_000) / 1_000;

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
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

function rowsFor(database: DatabaseKind, result: SizeResult, roundTrip: number): BenchRow[] {
  const sorted = [...result.turns].sort((a, b) => a - b);
  const turnMean = mean(result.turns);
  const label = `${result.size.toLocaleString("en-US")} events`;
  const base = { benchmark: BENCHMARK, database, case: label, unit: "ms" };
  const targetMs = TARGET_MS.get(result.size);
  const ok = targetMs === undefined ? undefined : turnMean < targetMs;
  const floor = CALLS_PER_TURN * roundTrip;
  const note =
    ok === false && database === "postgres"
      ? `a turn is ${CALLS_PER_TURN} round trips; a bare "select 1" takes ${round(roundTrip)} ms here, so ~${round(floor)} ms of the turn is network/protocol`
      : `${result.turns.length} turns, context grows by 2 events per turn`;
  const coldSorted = [...result.coldLoads].sort((a, b) => a - b);
  return [
    {
      ...base,
      metric: "turn mean",
      value: round(turnMean),
      ...(targetMs === undefined ? {} : { target: `< ${targetMs} ms`, ok }),
      note,
    },
    { ...base, metric: "turn p50", value: round(percentile(sorted, 50)) },
    { ...base, metric: "turn p99", value: round(percentile(sorted, 99)) },
    {
      ...base,
      metric: "cold load",
      value: round(percentile(coldSorted, 50)),
      note: `first loadContext after a restart, median of ${COLD_LOADS}; may grow with the context`,
    },
  ];
}

function growthRow(database: DatabaseKind, results: readonly SizeResult[]): BenchRow[] {
  const smallest = results[0];
  const largest = results.at(-1);
  if (!smallest || !largest || smallest === largest) return [];
  const linear = largest.size / smallest.size;
  return [
    {
      benchmark: BENCHMARK,
      database,
      case: `${smallest.size} → ${largest.size.toLocaleString("en-US")} events`,
      metric: "turn mean growth",
      value: round(mean(largest.turns) / mean(smallest.turns)),
      unit: "×",
      note: `linear growth would be ${round(linear)}×`,
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
  for (const database of DATABASES) rows.push(...(await benchDatabase(database, options, logger)));
  return rows;
}
