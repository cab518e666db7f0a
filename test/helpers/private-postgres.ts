import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parseDatabaseUrl } from "../../src/config.js";
import type { TestDatabase } from "./databases.js";
import { freePort } from "./spawn-service.js";

const run = promisify(execFile);

/**
 * A PostgreSQL server of a test's own, so the test can crash and restart it without touching the
 * shared one that other test files use at the same time.
 */
export type PrivatePostgres = {
  database: TestDatabase;
  /** Stops the server the way a crash does: no checkpoint, no flush; the next start recovers. */
  crash(): Promise<void>;
  start(): Promise<void>;
};

async function binDir(): Promise<string> {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  try {
    return (await run("pg_config", ["--bindir"])).stdout.trim();
  } catch {
    throw new Error(
      "This test runs a PostgreSQL server of its own and needs its programs (initdb, pg_ctl): install PostgreSQL's server package or set PG_BIN_DIR to the folder that holds them.",
    );
  }
}

/** initdb and the server refuse to run as root; as root they run as the `postgres` user. */
const asRoot = process.getuid?.() === 0;
const asServerUser = (program: string, args: string[]) =>
  asRoot ? run("runuser", ["-u", "postgres", "--", program, ...args]) : run(program, args);

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await binDir();
  const dir = mkdtempSync(join(tmpdir(), "koroku-pg-"));
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    chownSync(dir, Number(stdout.trim()), -1);
  }
  const data = join(dir, "data");
  await asServerUser(join(bin, "initdb"), [
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "postgres",
    "--no-sync",
  ]);
  const port = await freePort();
  const pgCtl = (...args: string[]) => asServerUser(join(bin, "pg_ctl"), ["-D", data, ...args]);
  const start = async () => {
    await pgCtl(
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
      "-l",
      join(dir, "server.log"),
      "-w",
      "start",
    );
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    database: {
      kind: "postgres",
      url,
      target: parseDatabaseUrl(url),
      dispose: async () => {
        // A test may end with the server already stopped; pg_ctl then fails, and that is fine.
        await pgCtl("-m", "immediate", "stop").catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      },
    },
    crash: async () => {
      await pgCtl("-m", "immediate", "stop");
    },
    start,
  };
}
