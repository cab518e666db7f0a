import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The service in a process of its own, as the tests and the benchmarks start it. The tests import
 * this file from test/helpers/; the benchmarks run it as dist-bench/test/helpers/spawn-service.js.
 */
export const REPO_ROOT = fileURLToPath(
  new URL(import.meta.url.includes("/dist-bench/") ? "../../../" : "../../", import.meta.url),
);
/** The service as `npm start` runs it, compiled by `npm test` and `npm run bench`. */
export const SERVICE_MAIN = join(REPO_ROOT, "dist/src/main.js");

const READY_MESSAGE = "Koroku is running";
const STOP_TIMEOUT_MS = 30_000;
const OUTPUT_TAIL_CHARS = 16_000;

export type RunningService = {
  proc: ChildProcess;
  pid: number;
  baseUrl: string;
  /** Parsed JSON log lines the process printed so far (a line that is not JSON as its `msg`). */
  logs: Record<string, unknown>[];
  /** Its exit code; null when a signal ended it. */
  exited: Promise<number | null>;
  /** The last of what the process printed (stderr, then stdout), for error messages. */
  output(): string;
  /** SIGTERM, then waits for the graceful exit (running turns finish first); fails unless 0. */
  stop(): Promise<void>;
};

export type SpawnServiceOptions = {
  /** The whole environment, PATH aside. */
  env: Record<string, string>;
  /** The script to run instead of the service's. */
  main?: string;
  /** Options to `node` itself (none by default). */
  nodeArgs?: readonly string[];
  /** Where the log lines go, from the start: a test may wait for one before the service is ready. */
  logs?: Record<string, unknown>[];
  /** Given the process as soon as it is spawned, e.g. to signal it while it starts. */
  onSpawn?: (proc: ChildProcess) => void;
  /**
   * What says the service is ready. By default its "Koroku is running" log line, which names the
   * port (PORT=0 lets the OS pick one); a service that logs at warn needs another sign, and is
   * then reached at the PORT of its environment.
   */
  ready?: Promise<unknown>;
};

/**
 * A port nobody listens on right now, for a service that must be told its port through PORT (one
 * that logs at warn never says which port it took) or for an address where nothing answers.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("expected a TCP port");
  return address.port;
}

function keepTail(stream: NodeJS.ReadableStream | null): () => string {
  let tail = "";
  stream?.on("data", (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL_CHARS);
  });
  return () => tail;
}

/** Each line of `stream` as JSON, to `onLine`. */
function readLogLines(
  stream: NodeJS.ReadableStream | null,
  onLine: (line: Record<string, unknown>) => void,
): void {
  let buffered = "";
  stream?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) {
      try {
        onLine(JSON.parse(line) as Record<string, unknown>);
      } catch {
        onLine({ msg: line });
      }
    }
  });
}

/**
 * Spawns `node [nodeArgs] dist/src/main.js` (or `main`) in the repository and waits until it is
 * ready. A process that exits first fails the start with what it printed; one that never gets
 * ready is killed.
 */
export async function spawnService(options: SpawnServiceOptions): Promise<RunningService> {
  const proc = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), options.main ?? SERVICE_MAIN],
    {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  options.onSpawn?.(proc);
  const exited = new Promise<number | null>((resolve) =>
    proc.once("exit", (code) => resolve(code)),
  );
  const logs = options.logs ?? [];
  let announce: (port: number) => void = () => {};
  const announced = new Promise<number>((resolve) => {
    announce = resolve;
  });
  readLogLines(proc.stdout, (line) => {
    logs.push(line);
    if (line.msg === READY_MESSAGE) announce(Number(line.port));
  });
  const stdout = keepTail(proc.stdout);
  const stderr = keepTail(proc.stderr);
  const output = () => `${stderr()}${stdout()}`.trim() || "(no output)";
  const died = exited.then((code) => {
    throw new Error(`service exited with ${code} before it was ready:\n${output()}`);
  });
  let port: number;
  try {
    port = await Promise.race([
      options.ready ? options.ready.then(() => Number(options.env.PORT)) : announced,
      died,
    ]);
  } catch (error) {
    proc.kill("SIGKILL");
    throw error;
  }
  died.catch(() => {});
  return {
    proc,
    pid: proc.pid as number,
    baseUrl: `http://127.0.0.1:${port}`,
    logs,
    exited,
    output,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_TIMEOUT_MS);
      const code = await exited;
      clearTimeout(timer);
      if (code !== 0) throw new Error(`service exited with ${code} on SIGTERM:\n${output()}`);
    },
  };
}
