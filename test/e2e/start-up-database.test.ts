import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { POSTGRES_URL, requirePostgres } from "../helpers/databases.js";
import { freePort, SERVICE_MAIN } from "../helpers/spawn-service.js";

// A process stuck in start-up (as one spun on mkdir for ever) is a failure, not a wait.
const EXIT_WITHIN_MS = 30_000;
// Root passes every permission check: a folder is unwritable only for someone else.
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) {
    chmodSync(root, 0o755);
    rmSync(root, { recursive: true, force: true });
  }
});

/** A folder of its own, readable by anyone: the service may run in it as another user. */
function scratch(): string {
  const root = mkdtempSync(join(tmpdir(), "koroku-startdb-"));
  chmodSync(root, 0o755);
  roots.push(root);
  return root;
}

/**
 * Starts the built service with `env` and waits for it to exit: its status and what it printed
 * on stderr. Telegram is a closed port: each case fails before the service would call it.
 */
async function startUntilExit(
  env: Record<string, string>,
  options: { cwd?: string; asAnotherUser?: boolean } = {},
): Promise<{ code: number | null; stderr: string }> {
  const other = options.asAnotherUser && asRoot ? { uid: NOBODY, gid: NOBODY } : {};
  const proc = spawn(process.execPath, [SERVICE_MAIN], {
    cwd: options.cwd,
    env: {
      PATH: process.env.PATH ?? "",
      TELEGRAM_BOT_TOKEN: "123:start-up-database",
      TELEGRAM_API_ROOT: `http://127.0.0.1:${await freePort()}`,
      GEMINI_API_KEY: "test-key",
      HOST: "127.0.0.1",
      PORT: "0",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
    ...other,
  });
  let stderr = "";
  proc.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), EXIT_WITHIN_MS);
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  clearTimeout(timer);
  if (proc.signalCode === "SIGKILL") {
    throw new Error(`the service did not exit within ${EXIT_WITHIN_MS} ms; stderr:\n${stderr}`);
  }
  return { code, stderr };
}

/** Exit status 1 and one line on stderr matching `said`: no stack, no second line. */
async function expectOneLine(
  run: Promise<{ code: number | null; stderr: string }>,
  said: RegExp,
): Promise<string> {
  const { code, stderr } = await run;
  expect(code, stderr).toBe(1);
  expect(stderr.trimEnd().split("\n"), stderr).toHaveLength(1);
  expect(stderr).toMatch(said);
  return stderr;
}

/** The tests' PostgreSQL URL with one part changed. */
function postgresUrl(change: (url: URL) => void): string {
  const url = new URL(POSTGRES_URL);
  change(url);
  return url.href;
}

describe("a SQLite database the service cannot use stops start-up with one line", () => {
  it("a folder that cannot be made (DATABASE_URL in /proc): at once, not spinning on mkdir", async () => {
    await expectOneLine(
      startUntilExit({ DATABASE_URL: "sqlite:/proc/koroku-nope/agent.db" }),
      /^Cannot create the folder \/proc\/koroku-nope for the SQLite database \/proc\/koroku-nope\/agent\.db \(ENOENT\): that file system does not take new folders there\. Set DATABASE_URL to a path on a writable file system\.$/m,
    );
  });

  it("a folder under a file", async () => {
    const root = scratch();
    writeFileSync(join(root, "a-file"), "");
    await expectOneLine(
      startUntilExit({ DATABASE_URL: `sqlite:${join(root, "a-file", "db", "agent.db")}` }),
      /^Cannot create the folder .*a-file\/db for the SQLite database .* \(ENOTDIR\): part of the path is a file, not a folder\. Fix the path in DATABASE_URL\.$/m,
    );
  });

  it("./data that cannot be made in an unwritable working directory", async () => {
    const cwd = scratch();
    chmodSync(cwd, 0o555);
    await expectOneLine(
      startUntilExit({}, { cwd, asAnotherUser: true }),
      /^Cannot create the folder .*\/data for the SQLite database \.\/data\/agent\.db \(EACCES\): permission denied\. Make its parent folder writable by the user the service runs as \(uid \d+\), or set DATABASE_URL to a path it can write to\.$/m,
    );
  });

  it("an unwritable ./data", async () => {
    const cwd = scratch();
    mkdirSync(join(cwd, "data"), { mode: 0o555 });
    chmodSync(join(cwd, "data"), 0o555);
    await expectOneLine(
      startUntilExit({}, { cwd, asAnotherUser: true }),
      /^Cannot open the SQLite database \.\/data\/agent\.db \(unable to open database file\): its folder must be writable by the user the service runs as \(uid \d+\), or set DATABASE_URL to a path that is\.$/m,
    );
  });

  it("a database file it may only read", async () => {
    const cwd = scratch();
    mkdirSync(join(cwd, "data"));
    chmodSync(join(cwd, "data"), 0o755);
    writeFileSync(join(cwd, "data", "agent.db"), "", { mode: 0o644 });
    await expectOneLine(
      startUntilExit({}, { cwd, asAnotherUser: true }),
      /^The SQLite database \.\/data\/agent\.db is read-only for this service \(attempt to write a readonly database\): make the file, and the folder it is in, writable by the user the service runs as \(uid \d+\)\.$/m,
    );
  });
});

describe("a PostgreSQL the service cannot use stops start-up with one line", () => {
  it("that refuses connections", async () => {
    const port = await freePort();
    await expectOneLine(
      startUntilExit({
        DATABASE_URL: postgresUrl((url) => {
          url.hostname = "127.0.0.1";
          url.port = String(port);
        }),
      }),
      new RegExp(
        `^PostgreSQL at 127\\.0\\.0\\.1:${port} refused the connection \\(ECONNREFUSED\\): start PostgreSQL there, or fix the host and port in DATABASE_URL\\.$`,
        "m",
      ),
    );
  });

  it("on a host that does not exist", async () => {
    await expectOneLine(
      startUntilExit({
        DATABASE_URL: postgresUrl((url) => {
          url.hostname = "no-such-host.invalid";
        }),
      }),
      // Without a resolver that answers, the lookup fails instead of finding no such host.
      /^PostgreSQL's host "no-such-host\.invalid" (was not found \(ENOTFOUND, no such host in DNS\): fix the host in DATABASE_URL|could not be looked up \(EAI_AGAIN, DNS did not answer\): check the host in DATABASE_URL and this machine's DNS)\.$/m,
    );
  });

  it("for a role it does not have, without the password", async () => {
    requirePostgres();
    const said = await expectOneLine(
      startUntilExit({
        DATABASE_URL: postgresUrl((url) => {
          url.username = "koroku_no_such_role";
          url.password = "pw-not-shown";
        }),
      }),
      /^PostgreSQL at [^ ]+ has no role "koroku_no_such_role" \(role "koroku_no_such_role" does not exist\): create it \(CREATE ROLE "koroku_no_such_role" LOGIN PASSWORD '…'\), or fix the user in DATABASE_URL\.$/m,
    );
    expect(said).not.toContain("pw-not-shown");
  });

  it("without the database named", async () => {
    requirePostgres();
    await expectOneLine(
      startUntilExit({
        DATABASE_URL: postgresUrl((url) => {
          url.pathname = "/koroku_no_such_db";
        }),
      }),
      /^PostgreSQL at [^ ]+ has no database "koroku_no_such_db" \(database "koroku_no_such_db" does not exist\): create it \(CREATE DATABASE "koroku_no_such_db" OWNER "[^"]+"\), or fix the database name in DATABASE_URL\.$/m,
    );
  });
});
