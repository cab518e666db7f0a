import { renameSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { cachingBenchmark } from "./caching.js";
import { compactionBenchmark } from "./compaction.js";
import { BENCH_DATABASES, parseBenchDatabases } from "./databases.js";
import { e2eBenchmark } from "./e2e.js";
import { parseHeapProfileKind } from "./heap-profile.js";
import { killUnderLoadBenchmark } from "./kill-under-load.js";
import { loadBenchmark } from "./load.js";
import { mediaBenchmark } from "./media.js";
import { mediaMemoryBenchmark } from "./media-memory.js";
import { memoryBenchmark } from "./memory.js";
import { recallBenchmark } from "./recall.js";
import { searchBenchmark } from "./search.js";
import { startupBenchmark } from "./startup.js";
import { storageBenchmark } from "./storage.js";
import { streamingBenchmark } from "./streaming.js";
import { voiceBenchmark } from "./voice.js";

export type BenchRow = {
  benchmark: string;
  /** "none": a case without a database (the load benchmark's library floor). */
  database: "sqlite" | "postgres" | "none";
  case: string;
  metric: string;
  value: number;
  unit: string;
  target?: string;
  ok?: boolean;
  note?: string;
};

export type Benchmark = () => Promise<BenchRow[]>;

const POSTGRES_URL =
  process.env.BENCH_POSTGRES_URL ??
  process.env.TEST_POSTGRES_URL ??
  "postgres://postgres@127.0.0.1:5432/test";
// BENCH_DATABASES=sqlite runs the database benchmarks on SQLite only.
const databases = parseBenchDatabases(process.env.BENCH_DATABASES);
const progress = (line: string) => process.stderr.write(`${line}\n`);
// Profiles only the e2e and load services; profiling slows them, so the numbers of such a run are not the real ones.
const cpuProfileDir = process.env.BENCH_CPU_PROFILE_DIR;
// Linux perf's record of each load service's CPU during its burst (bench/perf-summary.ts reads it).
const perfDir = process.env.BENCH_PERF_DIR;
// V8's sampling heap profile of each load service's burst (bench/heap-summary.ts reads it):
// BENCH_HEAP_PROFILE=allocated (every byte) or promoted (what outlived the young generation).
const heapProfileDir = process.env.BENCH_HEAP_PROFILE_DIR;
const heapProfile =
  heapProfileDir === undefined
    ? undefined
    : { dir: heapProfileDir, kind: parseHeapProfileKind(process.env.BENCH_HEAP_PROFILE) };

/** Every benchmark `npm run bench` runs, in order. */
const benchmarks: ReadonlyMap<string, Benchmark> = new Map([
  ["storage", () => storageBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["search", () => searchBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["recall", () => recallBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["compaction", () => compactionBenchmark({ progress })],
  ["caching", () => cachingBenchmark({ progress })],
  ["e2e", () => e2eBenchmark({ databases, postgresUrl: POSTGRES_URL, progress, cpuProfileDir })],
  [
    "load",
    () =>
      loadBenchmark({
        databases,
        postgresUrl: POSTGRES_URL,
        progress,
        cpuProfileDir,
        perfDir,
        ...(heapProfile === undefined ? {} : { heapProfile }),
      }),
  ],
  ["memory", () => memoryBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["streaming", () => streamingBenchmark({ progress, cpuProfileDir })],
  ["media", () => mediaBenchmark({ progress })],
  ["media-memory", () => mediaMemoryBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["startup", () => startupBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["kill", () => killUnderLoadBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
  ["voice", () => voiceBenchmark({ databases, postgresUrl: POSTGRES_URL, progress })],
]);

// This file runs as dist-bench/bench/run.js; the results live next to the sources, in bench/.
const RESULTS_PATH = fileURLToPath(new URL("../../bench/results.json", import.meta.url));

const COLUMNS = ["benchmark", "database", "case", "metric", "value", "target", "ok", "note"];

function cellsOf(row: BenchRow): string[] {
  return [
    row.benchmark,
    row.database,
    row.case,
    row.metric,
    `${row.value} ${row.unit}`,
    row.target ?? "",
    row.ok === undefined ? "" : row.ok ? "yes" : "NO",
    row.note ?? "",
  ];
}

function formatTable(rows: readonly BenchRow[]): string {
  const lines = [COLUMNS, ...rows.map(cellsOf)];
  const widths = COLUMNS.map((_, c) => Math.max(...lines.map((cells) => cells[c]?.length ?? 0)));
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, c) => cell.padEnd(widths[c] ?? 0))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [format(COLUMNS), rule, ...rows.map((row) => format(cellsOf(row)))].join("\n");
}

/** `node dist-bench/bench/run.js e2e startup` runs only those; no names runs them all. */
function selected(names: readonly string[]): Benchmark[] {
  const unknown = names.filter((name) => !benchmarks.has(name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown benchmark ${unknown.join(", ")}: choose from ${[...benchmarks.keys()].join(", ")}.`,
    );
  }
  return names.length === 0
    ? [...benchmarks.values()]
    : names.map((name) => benchmarks.get(name) as Benchmark);
}

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  const rows: BenchRow[] = [];
  for (const benchmark of selected(names)) {
    try {
      rows.push(...(await benchmark()));
    } catch (error) {
      process.exitCode = 1;
      progress(`benchmark failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  process.stdout.write(`${formatTable(rows)}\n`);
  const missed = rows.filter((row) => row.ok === false).length;
  if (missed > 0) process.stdout.write(`\n${missed} target(s) missed\n`);
  // A partial run must not replace the full results.
  if (names.length > 0 || databases.length < BENCH_DATABASES.length) return;
  const machine = {
    node: process.version,
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
  };
  const report = { date: new Date().toISOString(), machine, rows };
  // Written aside then renamed, so an interrupted run never leaves half a results file.
  writeFileSync(`${RESULTS_PATH}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
  renameSync(`${RESULTS_PATH}.tmp`, RESULTS_PATH);
  process.stdout.write(`results written to ${RESULTS_PATH}\n`);
}

await main();
