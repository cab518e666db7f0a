import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lockSqliteService, ServiceLockError } from "../../src/db/service-lock.js";
import { captureLogger } from "../helpers/logs.js";

const SERVICE_LOCK = join(import.meta.dirname, "../../dist/src/db/service-lock.js");

describe("the one-service lock on a SQLite database", () => {
  let dir: string;
  let database: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "koroku-lock-"));
    database = join(dir, "data", "agent.db");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a second holder after waiting, saying what to do", async () => {
    const { logger, lines } = captureLogger();
    const first = await lockSqliteService(database, { waitMs: 0, logger });
    const second = lockSqliteService(database, { waitMs: 300, logger });
    await expect(second).rejects.toBeInstanceOf(ServiceLockError);
    await expect(second).rejects.toThrow(/one service process per database file.*PostgreSQL/);
    expect(lines.map((l) => l.msg)).toContain(
      "another Koroku service holds this SQLite database; waiting for it to stop",
    );
    first.release();
    (await lockSqliteService(database, { waitMs: 0, logger })).release();
  });

  it("says so when the lock file cannot be made", async () => {
    const { logger } = captureLogger();
    const blocked = join(dir, "a-file");
    writeFileSync(blocked, "");
    await expect(
      lockSqliteService(join(blocked, "agent.db"), { waitMs: 0, logger }),
    ).rejects.toThrow(/Cannot create the lock file .*agent\.db\.lock .*folder must be writable/);
  });

  it("is taken over by a waiting holder once released", async () => {
    const { logger } = captureLogger();
    const first = await lockSqliteService(database, { waitMs: 0, logger });
    const second = lockSqliteService(database, { waitMs: 30_000, logger });
    setTimeout(() => first.release(), 100);
    (await second).release();
  });

  it("is held across processes, and freed when its process is killed", async () => {
    const { logger } = captureLogger();
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { lockSqliteService } = await import(${JSON.stringify(SERVICE_LOCK)});
         await lockSqliteService(${JSON.stringify(database)}, { waitMs: 0, logger: console });
         console.log("locked");
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
    await expect(lockSqliteService(database, { waitMs: 0, logger })).rejects.toBeInstanceOf(
      ServiceLockError,
    );
    child.kill("SIGKILL");
    await exited;
    (await lockSqliteService(database, { waitMs: 0, logger })).release();
  });
});
