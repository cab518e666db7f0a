import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseKind } from "../src/db/connect.js";
import { freePort } from "../test/helpers/spawn-service.js";
import { type ChatDriver, createChatDriver } from "./chat-driver.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { deliveryBetween, deliveryRow } from "./delivery.js";
import { type Fakes, startFakes } from "./fakes.js";
import { envCount } from "./load.js";
import { jpeg } from "./media.js";
import type { BenchRow } from "./run.js";
import { type ServiceProcess, serviceEnv, startService, watchPeakRss } from "./service-process.js";
import { round } from "./stats.js";

const BENCHMARK = "media-memory";
const CHATS = envCount("BENCH_MEDIA_MEMORY_CHATS", 100);
/** Rounds of one photo turn in every chat: 1,000 photo turns, 10 photos in each context. */
const ROUNDS = envCount("BENCH_MEDIA_MEMORY_ROUNDS", 10);
/** Rounds after those, to see whether memory keeps growing with the photos stored. */
const MORE_ROUNDS = envCount("BENCH_MEDIA_MEMORY_MORE_ROUNDS", 4);
const PHOTO_BYTES = 1024 * 1024;
const FIRST_USER_ID = 3_000_001;
const SAMPLE_MS = 100;
const TARGET_MB = 200;
/** "Flat": what more photo turns may add once the first thousand have gone through. */
const FLAT_MB = 5;
/**
 * How long a photo turn may take, from its POST to its answer: a round posts all chats' photos at
 * once, and on two shared cores the last of a hundred waits behind the others for well over the
 * chat driver's default 30 s.
 */
const ANSWER_TIMEOUT_MS = 180_000;

const users = Array.from({ length: CHATS }, (_, i) => FIRST_USER_ID + i);

/**
 * One photo turn in every chat, all chats at once: a distinct 1 MB JPEG each, served by the fake
 * Telegram through getFile and its file URL, and forgotten by it once answered.
 */
async function photoRound(fakes: Fakes, driver: ChatDriver, roundNo: number): Promise<void> {
  await Promise.all(
    users.map(async (user, i) => {
      const file = fakes.telegram.addFile(jpeg(roundNo * CHATS + i, PHOTO_BYTES));
      try {
        await driver.turn(user, file);
      } finally {
        fakes.telegram.removeFile(file.file_id);
      }
    }),
  );
}

/**
 * How long the service is left without traffic before its resident size is read: V8 gives memory
 * back only in the collections it makes once allocation has slowed down (its memory reducer,
 * seconds after the last full collection), and a burst of photo turns leaves hundreds of
 * megabytes of garbage strings and buffers behind.
 */
const QUIET_MS = 30_000;

type Samples = {
  afterStart: number;
  /** Read at once when the last answer arrived, and after QUIET_MS without traffic. */
  afterPhotos: { busy: number; quiet: number };
  afterMore: { busy: number; quiet: number };
  peak: number;
  /** The service's CPU time (user and system) over all the photo turns, quiet periods included. */
  cpuMs: number;
};

async function sampleQuiet(service: ServiceProcess): Promise<{ busy: number; quiet: number }> {
  const busy = service.rssMb();
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  return { busy, quiet: service.rssMb() };
}

async function driveAndSample(
  fakes: Fakes,
  service: ServiceProcess,
  driver: ChatDriver,
  progress: (line: string) => void,
): Promise<Samples> {
  const afterStart = service.rssMb();
  const cpuBefore = service.cpuTime();
  const watch = watchPeakRss(service, SAMPLE_MS);
  try {
    let roundNo = 0;
    for (; roundNo < ROUNDS; roundNo++) await photoRound(fakes, driver, roundNo);
    const afterPhotos = await sampleQuiet(service);
    progress(
      `media-memory: ${CHATS * ROUNDS} photo turns, RSS ${round(afterPhotos.busy, 1)} MB, ${round(afterPhotos.quiet, 1)} MB after ${QUIET_MS / 1000} s quiet`,
    );
    for (; roundNo < ROUNDS + MORE_ROUNDS; roundNo++) await photoRound(fakes, driver, roundNo);
    const afterMore = await sampleQuiet(service);
    const cpu = service.cpuTime();
    const cpuMs = cpu.userMs + cpu.systemMs - cpuBefore.userMs - cpuBefore.systemMs;
    return { afterStart, afterPhotos, afterMore, peak: watch.peak(), cpuMs };
  } finally {
    watch.stop();
  }
}

function rowsFor(samples: Samples, database: DatabaseKind): BenchRow[] {
  const base = { benchmark: BENCHMARK, database, unit: "MB" };
  const photoCase = `${(CHATS * ROUNDS).toLocaleString("en-US")} photo turns (1 MB) in ${CHATS} chats, npm start`;
  const quiet = `after ${QUIET_MS / 1000} s without traffic`;
  const growth = samples.afterMore.quiet - samples.afterPhotos.quiet;
  return [
    { ...base, case: photoCase, metric: "RSS after start", value: round(samples.afterStart, 1) },
    {
      ...base,
      case: photoCase,
      metric: "RSS as the last photo turn is answered",
      value: round(samples.afterPhotos.busy, 1),
      note: `${ROUNDS} rounds of one photo turn in every chat, all ${CHATS} chats at once`,
    },
    {
      ...base,
      case: photoCase,
      metric: "RSS after the photo turns",
      value: round(samples.afterPhotos.quiet, 1),
      target: `< ${TARGET_MB} MB`,
      ok: samples.afterPhotos.quiet < TARGET_MB,
      note: quiet,
    },
    {
      ...base,
      case: photoCase,
      metric: `RSS after ${MORE_ROUNDS} more rounds`,
      value: round(samples.afterMore.quiet, 1),
      target: `< ${TARGET_MB} MB`,
      ok: samples.afterMore.quiet < TARGET_MB,
      note: `${quiet}; ${round(samples.afterMore.busy, 1)} MB as the last was answered`,
    },
    {
      ...base,
      case: photoCase,
      metric: "RSS growth",
      value: round(growth, 1),
      target: `< ${FLAT_MB} MB`,
      ok: growth < FLAT_MB,
      note: `from the photo turns to ${MORE_ROUNDS} more in each chat (${CHATS * MORE_ROUNDS} MB more photos stored), both ${quiet}`,
    },
    {
      ...base,
      case: photoCase,
      metric: "RSS peak",
      value: round(samples.peak, 1),
      note: `/proc VmRSS sampled every ${SAMPLE_MS} ms during the traffic`,
    },
    {
      ...base,
      case: photoCase,
      metric: "service CPU per photo turn",
      value: round(samples.cpuMs / (CHATS * (ROUNDS + MORE_ROUNDS)), 1),
      unit: "ms",
      note: "user and system time over all the photo turns",
    },
  ];
}

async function measure(
  fakes: Fakes,
  database: DatabaseKind,
  postgresUrl: string,
  progress: (line: string) => void,
): Promise<BenchRow[]> {
  const bench = await createBenchDatabase(database, postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-media-memory-"));
  try {
    const env = serviceEnv({
      fakes,
      database: bench.target,
      port: await freePort(),
      allowedUserIds: users,
      dataDir,
    });
    const before = fakes.stats();
    const service = await startService({ env, fakes });
    const driver = createChatDriver(fakes, service.baseUrl, {
      answerTimeoutMs: ANSWER_TIMEOUT_MS,
    });
    try {
      const samples = await driveAndSample(fakes, service, driver, progress).catch(
        (error: unknown) => {
          throw new Error(
            `${error instanceof Error ? error.message : String(error)}\nservice output:\n${service.output()}`,
          );
        },
      );
      await service.stop();
      const turns = CHATS * (ROUNDS + MORE_ROUNDS);
      const delivery = deliveryBetween(before, fakes.stats(), turns, driver.counts);
      const where = { benchmark: BENCHMARK, database, case: "all photo turns" };
      return [...rowsFor(samples, database), deliveryRow(where, delivery)];
    } finally {
      driver.close();
      await service.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await bench.dispose();
  }
}

/**
 * Resident memory of the service, run as `npm start` runs it, through a thousand photo turns in a
 * hundred chats and more after them: each context ends with 10 to 14 photos of 1 MB, the oldest
 * two of which every request carries inline (INLINE_BUDGET_BYTES), the rest by Files API uri.
 */
export async function mediaMemoryBenchmark(options: DatabaseBenchOptions): Promise<BenchRow[]> {
  const progress = options.progress ?? (() => {});
  const fakes = await startFakes();
  try {
    const rows: BenchRow[] = [];
    for (const database of options.databases) {
      progress(`media-memory: ${database}, ${CHATS * (ROUNDS + MORE_ROUNDS)} photo turns`);
      rows.push(...(await measure(fakes, database, options.postgresUrl, progress)));
    }
    return rows;
  } finally {
    await fakes.close();
  }
}
