import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseTarget } from "../src/config.js";
import { REPO_ROOT, type RunningService, spawnService } from "../test/helpers/spawn-service.js";
import type { Fakes } from "./fakes.js";

/** The libraries' floor: a bot that only asks Gemini and answers (bench/floor-service.ts). */
export const FLOOR_SERVICE_MAIN = join(REPO_ROOT, "dist-bench/bench/floor-service.js");
/** The library floor doing a Koroku turn's work by hand (bench/work-floor-service.ts). */
export const WORK_FLOOR_SERVICE_MAIN = join(REPO_ROOT, "dist-bench/bench/work-floor-service.js");
export const WEBHOOK_SECRET = "bench-webhook-secret";

const READY_TIMEOUT_MS = 20_000;

export const databaseUrl = (target: DatabaseTarget): string =>
  target.kind === "sqlite" ? `sqlite:${target.path}` : target.connectionString;

export type ServiceEnvOptions = {
  fakes: Fakes;
  database: DatabaseTarget;
  port: number;
  /** Private chats have the user's id as chat id, so each chat needs its own allowed user. */
  allowedUserIds: readonly number[];
  /** Where MEMORY_DIR and WORKSPACE_DIR go. */
  dataDir: string;
};

export type StartCommand = {
  /** Variables the script sets before `node` (NAME=value). */
  env: Record<string, string>;
  /** Options to `node` itself, before the script it runs. */
  nodeArgs: string[];
};

/**
 * The environment and Node options of the `start` script in package.json, so that a benchmark
 * measures the service as `npm start` runs it. The script is a plain `NAME=value … [exec] node
 * --flag … script …` command line; anything else is refused rather than misread.
 */
export function parseStartScript(script: string): StartCommand {
  const words = script.trim().split(/\s+/);
  const node = words.indexOf("node");
  if (node < 0) throw new Error(`the start script does not run node: ${script}`);
  const env: Record<string, string> = {};
  for (const word of words.slice(0, words[node - 1] === "exec" ? node - 1 : node)) {
    const match = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word);
    if (!match) throw new Error(`unexpected "${word}" before node in the start script: ${script}`);
    env[match[1] as string] = match[2] as string;
  }
  const rest = words.slice(node + 1);
  const scriptAt = rest.findIndex((word) => !word.startsWith("-"));
  return { env, nodeArgs: scriptAt < 0 ? rest : rest.slice(0, scriptAt) };
}

const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  scripts: { start: string };
};
export const START_COMMAND: StartCommand = parseStartScript(packageJson.scripts.start);

/** The service in webhook mode against the fakes, quiet, with compaction off. */
export function serviceEnv(options: ServiceEnvOptions): Record<string, string> {
  const { fakes } = options;
  return {
    ...START_COMMAND.env,
    PATH: process.env.PATH ?? "",
    TELEGRAM_BOT_TOKEN: fakes.telegramToken,
    TELEGRAM_API_ROOT: fakes.telegramApiRoot,
    GEMINI_API_KEY: "bench-key",
    GEMINI_BASE_URL: fakes.geminiBaseUrl,
    GEMINI_MODEL: "chat-model",
    GEMINI_COMPACTION_MODEL: "summary-model",
    ALLOWED_USER_IDS: options.allowedUserIds.join(","),
    DATABASE_URL: databaseUrl(options.database),
    MEMORY_DIR: join(options.dataDir, "memory"),
    WORKSPACE_DIR: join(options.dataDir, "workspace"),
    HOST: "127.0.0.1",
    PORT: String(options.port),
    WEBHOOK_URL: "https://koroku.bench/telegram/webhook",
    WEBHOOK_SECRET,
    // Contexts grow for the whole run: a summary call in the middle would be a different benchmark.
    COMPACTION_MAX_EVENTS: "0",
    COMPACTION_MAX_TOKENS: "0",
    LOG_LEVEL: "warn",
    // The benchmarks count and time sendMessage: the HTML answers they were written for.
    RICH_MESSAGES: "false",
  };
}

/** Node options that make a service write a V8 CPU profile into `dir` (none without a dir). */
export function profileArgs(dir: string | undefined, name: string): string[] {
  if (dir === undefined) return [];
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`];
}

export type CpuTime = { userMs: number; systemMs: number };

/** The service a benchmark measures: its memory and CPU time, besides what the tests see. */
export type ServiceProcess = RunningService & {
  /** Resident set size now, from /proc. */
  rssMb(): number;
  /** CPU time the process has used so far, from /proc. */
  cpuTime(): CpuTime;
  /** CPU time of the process's main thread alone (its event loop), from /proc. */
  mainThreadCpuTime(): CpuTime;
};

/** Resident set size of a process, from /proc/<pid>/status (Linux). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`/proc/${pid}/status has no VmRSS line`);
  return Number(kb) / 1024;
}

/** The largest resident size of the service, read every `everyMs` until stopped. */
export function watchPeakRss(
  service: ServiceProcess,
  everyMs: number,
): { peak(): number; stop(): void } {
  let peak = service.rssMb();
  const timer = setInterval(() => {
    peak = Math.max(peak, service.rssMb());
  }, everyMs);
  return {
    peak: () => Math.max(peak, service.rssMb()),
    stop: () => clearInterval(timer),
  };
}

// USER_HZ: the unit of /proc/<pid>/stat times, 100 on every Linux architecture Node runs on.
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * User and system CPU time of a process, from /proc/<pid>/stat (Linux; 10 ms resolution), or of
 * one of its threads (its main thread's id is the process's).
 */
export function cpuTime(pid: number, thread?: number): CpuTime {
  const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
  const stat = readFileSync(path, "utf8");
  // Fields after the command name, which is in parentheses and may itself hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticksToMs = (field: string | undefined) => (Number(field) * 1_000) / CLOCK_TICKS_PER_SECOND;
  // utime and stime are fields 14 and 15 of the whole line; the slice starts at field 3.
  return { userMs: ticksToMs(fields[11]), systemMs: ticksToMs(fields[12]) };
}

/**
 * Spawns the service (or `main`) with `npm start`'s node options unless told others, and waits
 * until the fake Telegram receives its setWebhook: by then the webhook accepts updates. At
 * LOG_LEVEL=warn, that is the only sign it gives.
 */
export async function startService(options: {
  env: Record<string, string>;
  fakes: Fakes;
  nodeArgs?: readonly string[];
  /** The script to run instead of the service's (FLOOR_SERVICE_MAIN). */
  main?: string;
}): Promise<ServiceProcess> {
  const service = await spawnService({
    env: options.env,
    nodeArgs: options.nodeArgs ?? START_COMMAND.nodeArgs,
    ready: options.fakes.nextArrival("setWebhook", READY_TIMEOUT_MS),
    ...(options.main === undefined ? {} : { main: options.main }),
  });
  return {
    ...service,
    rssMb: () => rssMb(service.pid),
    cpuTime: () => cpuTime(service.pid),
    mainThreadCpuTime: () => cpuTime(service.pid, service.pid),
  };
}
