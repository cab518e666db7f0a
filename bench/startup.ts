import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { DatabaseKind } from "../src/db/connect.js";
import { freePort, REPO_ROOT, SERVICE_MAIN } from "../test/helpers/spawn-service.js";
import { createBenchDatabase, type DatabaseBenchOptions } from "./databases.js";
import { type Fakes, startFakes } from "./fakes.js";
import type { BenchRow } from "./run.js";
import { serviceEnv } from "./service-process.js";
import { round, summarize } from "./stats.js";

export type StartupBenchOptions = DatabaseBenchOptions;

const BENCHMARK = "startup";
const RUNS = 5;
const POLL_MS = 5;
// The untimed first run may have to compile dist/ when it is stale.
const HEALTHY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 10_000;
const TARGET_MS = 1_000;
const REBUILT = "Compiling TypeScript";

type Launcher = { name: string; command: string; args: string[]; targetMs?: number };

const LAUNCHERS: readonly Launcher[] = [
  { name: "npm start", command: "npm", args: ["start"], targetMs: TARGET_MS },
  { name: "node dist/src/main.js", command: process.execPath, args: [SERVICE_MAIN] },
];

type Run = { ms: number; rebuilt: boolean };

function healthz(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = get({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.once("error", () => resolve(undefined));
  });
}

/** Polls /healthz every POLL_MS until it answers 200; fails if the process ends first. */
async function untilHealthy(port: number, proc: ChildProcess, output: () => string) {
  const deadline = performance.now() + HEALTHY_TIMEOUT_MS;
  while ((await healthz(port)) !== 200) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(
        `the service ended (${proc.exitCode ?? proc.signalCode}) before /healthz answered 200:\n${output()}`,
      );
    }
    if (performance.now() > deadline) {
      throw new Error(`/healthz did not answer 200 within ${HEALTHY_TIMEOUT_MS} ms:\n${output()}`);
    }
    await delay(POLL_MS);
  }
}

/**
 * Ends the process group the launcher leads: npm, the shell it runs the script in, and the
 * service. Resolves once every one of them has let go of the output pipes, i.e. has exited.
 */
async function stopGroup(proc: ChildProcess, closed: Promise<void>): Promise<void> {
  const pid = proc.pid as number;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), STOP_TIMEOUT_MS);
  await closed;
  clearTimeout(timer);
}

type Where = { database: DatabaseKind; postgresUrl: string; fakes: Fakes };

/** One start on a database of its own (a fresh SQLite file or PostgreSQL schema): migrations run. */
async function timeOneStart(launcher: Launcher, where: Where): Promise<Run> {
  const { fakes } = where;
  const dataDir = mkdtempSync(join(tmpdir(), "koroku-bench-startup-"));
  const bench = await createBenchDatabase(where.database, where.postgresUrl);
  const port = await freePort();
  const env = {
    HOME: process.env.HOME ?? dataDir,
    ...serviceEnv({
      fakes,
      database: bench.target,
      port,
      allowedUserIds: [424242],
      dataDir,
    }),
  };
  const start = performance.now();
  const proc = spawn(launcher.command, launcher.args, {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk.toString("utf8");
  };
  proc.stdout?.on("data", keep);
  proc.stderr?.on("data", keep);
  const closed = new Promise<void>((resolve) => proc.once("close", () => resolve()));
  try {
    await untilHealthy(port, proc, () => output.trim() || "(no output)");
    return { ms: performance.now() - start, rebuilt: output.includes(REBUILT) };
  } finally {
    await stopGroup(proc, closed);
    rmSync(dataDir, { recursive: true, force: true });
    await bench.dispose();
  }
}

async function measure(launcher: Launcher, where: Where): Promise<BenchRow> {
  // Untimed: fills the OS file cache and, for npm start, brings a stale dist/ up to date.
  const first = await timeOneStart(launcher, where);
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await timeOneStart(launcher, where));
  const times = summarize(runs.map((run) => run.ms));
  const min = Math.min(...runs.map((run) => run.ms));
  const rebuilt = runs.some((run) => run.rebuilt);
  const { targetMs } = launcher;
  const notes = [
    `median of ${RUNS} starts on ${where.database === "sqlite" ? "a fresh SQLite file" : "a fresh PostgreSQL schema"} (${round(min, 0)}–${round(times.max, 0)} ms), spawn → first 200 from /healthz polled every ${POLL_MS} ms`,
    first.rebuilt && "dist/ was stale: the untimed first start compiled it",
    rebuilt && "dist/ went stale during the runs (someone edited sources): some starts compiled",
  ].filter((note) => typeof note === "string");
  return {
    benchmark: BENCHMARK,
    database: where.database,
    case: launcher.name,
    metric: "time to healthy",
    value: round(times.p50, 1),
    unit: "ms",
    ...(targetMs === undefined
      ? {}
      : { target: `< ${targetMs} ms`, ok: times.p50 < targetMs && !rebuilt }),
    note: notes.join("; "),
  };
}

/** From launching the service to its first 200 on /healthz, through npm and directly. */
export async function startupBenchmark(options: StartupBenchOptions): Promise<BenchRow[]> {
  const fakes = await startFakes();
  try {
    const rows: BenchRow[] = [];
    for (const database of options.databases) {
      for (const launcher of LAUNCHERS) {
        options.progress?.(`startup: ${database}, ${launcher.name}`);
        rows.push(await measure(launcher, { database, postgresUrl: options.postgresUrl, fakes }));
      }
    }
    return rows;
  } finally {
    await fakes.close();
  }
}
