import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseTarget } from "../src/config.js";
import { type DatabaseKind, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createLogger } from "../src/logger.js";
import type { SessionEvent } from "../src/session/events.js";
import { createSessionStore } from "../src/session/store.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { type ChatDriver, createChatDriver } from "./chat-driver.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { deliveryBetween, deliveryRow } from "./delivery.js";
import { type Fakes, startFakes } from "./fakes.js";
import { historyTurn } from "./history.js";
import type { BenchRow } from "./run.js";
import {
  type ServiceProcess,
  START_COMMAND,
  serviceEnv,
  startService,
  watchPeakRss,
} from "./service-process.js";
import { round } from "./stats.js";

export type MemoryBenchOptions = DatabaseBenchOptions;

const BENCHMARK = "memory";
const CHATS = 1_000;
const EVENTS_PER_CHAT = 100;
const FIRST_USER_ID = 2_000_001;
/**
 * Rounds of one turn in every chat after the first round has touched them all: enough turns that
 * a leak of a kilobyte a turn stands out of the garbage collector's ups and downs (one did).
 */
const MORE_ROUNDS = 4;
/** Chats with a turn in flight at once. */
const CONCURRENCY = 50;
/**
 * How long a turn may wait for its answer: on a shared host at a load average of 15 a turn of the
 * first round (50 histories loaded at once) waited over the chat driver's default 30 s.
 */
const ANSWER_TIMEOUT_MS = 180_000;
const SAMPLE_MS = 100;
const TARGET_MB = 150;
/** "Flat": what more traffic may add once every chat has been loaded. */
const FLAT_MB = 5;

const users = Array.from({ length: CHATS }, (_, i) => FIRST_USER_ID + i);

/** Stores the history straight through the session store, as the service would have. */
async function prefill(target: DatabaseTarget): Promise<void> {
  const logger = createLogger({ level: "silent", secrets: [] });
  const db = openDatabase(target);
  try {
    await migrateToLatest(db.db, logger);
    const store = createSessionStore({ db: db.db, logger });
    for (const [chat, user] of users.entries()) {
      const events: SessionEvent[] = [];
      for (let turn = 0; events.length < EVENTS_PER_CHAT; turn++) {
        events.push(...historyTurn(chat * 100 + turn));
      }
      await store.append(
        String(user),
        events.slice(0, EVENTS_PER_CHAT).map((event) => ({ event })),
      );
    }
  } finally {
    await db.close();
  }
}

/** One turn in every chat, CONCURRENCY chats at a time. */
async function round1Each(driver: ChatDriver): Promise<void> {
  const queue = [...users];
  const worker = async () => {
    for (let chat = queue.shift(); chat !== undefined; chat = queue.shift())
      await driver.turn(chat);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

type Samples = { afterStart: number; afterTouch: number; afterMore: number; peak: number };

async function driveAndSample(service: ServiceProcess, driver: ChatDriver): Promise<Samples> {
  const afterStart = service.rssMb();
  const watch = watchPeakRss(service, SAMPLE_MS);
  try {
    await round1Each(driver);
    const afterTouch = service.rssMb();
    for (let i = 0; i < MORE_ROUNDS; i++) await round1Each(driver);
    const afterMore = service.rssMb();
    return { afterStart, afterTouch, afterMore, peak: watch.peak() };
  } finally {
    watch.stop();
  }
}

function rowsFor(samples: Samples, variant: Variant, database: DatabaseKind): BenchRow[] {
  const base = { benchmark: BENCHMARK, database, unit: "MB" };
  const stored = `${CHATS.toLocaleString("en-US")} chats × ${EVENTS_PER_CHAT} events${variant.label}`;
  const growth = samples.afterMore - samples.afterTouch;
  // The targets are for the service as it is deployed (`npm start`, the Docker image); plain
  // node is measured only to show what the heap settings buy.
  const judged = (target: string, ok: boolean) => (variant.npmStart ? { target, ok } : {});
  return [
    { ...base, case: stored, metric: "RSS after start", value: round(samples.afterStart, 1) },
    {
      ...base,
      case: stored,
      metric: "RSS after touching every chat",
      value: round(samples.afterTouch, 1),
      ...judged(`< ${TARGET_MB} MB`, samples.afterTouch < TARGET_MB),
      note: `one turn in each chat (${CONCURRENCY} at a time): every history loaded once`,
    },
    {
      ...base,
      case: stored,
      metric: `RSS after ${MORE_ROUNDS} more rounds`,
      value: round(samples.afterMore, 1),
      ...judged(`< ${TARGET_MB} MB`, samples.afterMore < TARGET_MB),
    },
    {
      ...base,
      case: stored,
      metric: "RSS growth",
      value: round(growth, 1),
      ...judged(`< ${FLAT_MB} MB`, growth < FLAT_MB),
      note: `from touching every chat to ${MORE_ROUNDS} more turns in each (contexts +${2 * MORE_ROUNDS} events)`,
    },
    {
      ...base,
      case: stored,
      metric: "RSS peak",
      value: round(samples.peak, 1),
      note: `/proc VmRSS sampled every ${SAMPLE_MS} ms during the traffic`,
    },
  ];
}

/**
 * The service as `npm start` runs it (its heap settings and MALLOC_ARENA_MAX), and for comparison
 * as plain `node dist/src/main.js` runs it, with Node's defaults.
 */
type Variant = { label: string; npmStart: boolean };
const VARIANTS: readonly Variant[] = [
  { label: ", npm start", npmStart: true },
  { label: ", plain node (Node's default heap)", npmStart: false },
];

async function measure(
  fakes: Fakes,
  target: DatabaseTarget,
  variant: Variant,
): Promise<BenchRow[]> {
  const database = target.kind;
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-memory-"));
  try {
    const env = serviceEnv({
      fakes,
      database: target,
      port: await freePort(),
      allowedUserIds: users,
      dataDir,
    });
    if (!variant.npmStart) for (const name of Object.keys(START_COMMAND.env)) delete env[name];
    const before = fakes.stats();
    const nodeArgs = variant.npmStart ? START_COMMAND.nodeArgs : [];
    const service = await startService({ env, fakes, nodeArgs });
    const driver = createChatDriver(fakes, service.baseUrl, {
      answerTimeoutMs: ANSWER_TIMEOUT_MS,
    });
    try {
      const samples = await driveAndSample(service, driver).catch((error: unknown) => {
        throw new Error(
          `${error instanceof Error ? error.message : String(error)}\nservice output:\n${service.output()}`,
        );
      });
      await service.stop();
      const after = fakes.stats();
      const turns = CHATS * (1 + MORE_ROUNDS);
      const delivery = deliveryBetween(before, after, turns, driver.counts);
      const where = {
        benchmark: BENCHMARK,
        database,
        case: `all turns${variant.label}`,
      };
      return [...rowsFor(samples, variant, database), deliveryRow(where, delivery)];
    } finally {
      driver.close();
      await service.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Resident memory of the service holding many long conversations: the database is filled
 * through the session store, then every chat gets turns while /proc/<pid>/status is sampled.
 */
export async function memoryBenchmark(options: MemoryBenchOptions): Promise<BenchRow[]> {
  const fakes = await startFakes();
  const rows: BenchRow[] = [];
  try {
    // Each run gets a database of its own: the chat driver's update ids start over.
    for (const database of options.databases) {
      for (const variant of VARIANTS) {
        const bench = await createBenchDatabase(database, options.postgresUrl);
        try {
          options.progress?.(`memory: ${database}, storing ${CHATS * EVENTS_PER_CHAT} events`);
          await prefill(bench.target);
          options.progress?.(
            `memory: ${database}, ${CHATS * (1 + MORE_ROUNDS)} turns over ${CHATS} chats${variant.label}`,
          );
          rows.push(...(await measure(fakes, bench.target, variant)));
        } finally {
          await bench.dispose();
        }
      }
    }
    return rows;
  } finally {
    await fakes.close();
  }
}
