import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import SQLite from "better-sqlite3";
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startCheckpointer } from "../../src/db/checkpointer.js";
import { openDatabase } from "../../src/db/connect.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { runModuleScript } from "../helpers/module-script.js";
import { eventually } from "../helpers/service-process.js";

const BUILT_CHECKPOINTER = join(import.meta.dirname, "../../dist/src/db/checkpointer.js");

const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

describe("checkpoints on a thread of their own", () => {
  let testDb: TestDatabase;
  let path: string;
  beforeEach(async () => {
    testDb = await createTestDatabase("sqlite");
    if (testDb.target.kind !== "sqlite") throw new Error("expected a SQLite target");
    path = testDb.target.path;
  });
  afterEach(() => testDb.dispose());

  it("copy what the service writes into the database file, and end with the handle", async () => {
    const handle = openDatabase(testDb.target);
    await sql`create table notes (body text not null)`.execute(handle.db);
    const body = "x".repeat(4_000);
    // 2 MB: far below the main connection's own checkpoint (10,000 pages, about 40 MB), so only
    // the checkpointer can move these pages out of the WAL.
    for (let i = 0; i < 500; i++) {
      await sql`insert into notes (body) values (${body})`.execute(handle.db);
    }
    await eventually(() => sizeOf(path) > 2_000_000);
    const { rows } = await sql<{ n: number }>`select count(*) as n from notes`.execute(handle.db);
    expect(rows[0]?.n).toBe(500);
    await handle.close();
    // The last connection to close removes the WAL: the checkpointer's was closed first.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("stops at once after it started, without terminating the thread mid-load", async () => {
    // Terminated while loading better-sqlite3's addon, the thread would abort this whole process.
    const errors: string[] = [];
    for (let i = 0; i < 10; i++) {
      const checkpointer = startCheckpointer(path, {
        onError: (message) => errors.push(message),
        onRecovered: () => {},
      });
      await checkpointer.stop();
    }
    expect(errors).toEqual([]);
  });

  it("keeps the process alive while a stop waits for the thread, when nothing else does", async () => {
    // The thread is unreferenced: a process whose only work left is this stop (a start-up that
    // failed on a taken port) would otherwise exit with 0 in the middle of it.
    const script = `
      import { startCheckpointer } from ${JSON.stringify(pathToFileURL(BUILT_CHECKPOINTER).href)};
      const checkpointer = startCheckpointer(${JSON.stringify(path)}, { onError() {}, onRecovered() {} });
      await checkpointer.stop();
      console.log("stopped");
    `;
    expect(await runModuleScript(script)).toEqual({ code: 0, stdout: "stopped\n" });
  });

  it("reports a checkpoint thread that cannot run, and what happens instead", async () => {
    const messages: string[] = [];
    const checkpointer = startCheckpointer(`${path}-missing/agent.db`, {
      onError: (message) => messages.push(message),
      onRecovered: (message) => messages.push(message),
    });
    await eventually(() => messages.length >= 2);
    await checkpointer.stop();
    expect(messages).toEqual([
      expect.stringMatching(
        /^the SQLite checkpoint thread failed \(.*directory does not exist.*\); checkpoints now run inside commits/,
      ),
      expect.stringMatching(
        /^the SQLite checkpoint thread stopped \(exit code 1\); checkpoints now run/,
      ),
    ]);
  });

  it("reports checkpoints that keep failing once, and again only when they work", async () => {
    // Not a database: every checkpoint fails the same way, as on a full disk.
    const notDatabase = `${path}-not-a-database`;
    writeFileSync(notDatabase, "x".repeat(8_192));
    const messages: string[] = [];
    const checkpointer = startCheckpointer(notDatabase, {
      onError: (message) => messages.push(message),
      onRecovered: (message) => messages.push(message),
      intervalMs: 5,
    });
    try {
      await eventually(() => messages.length > 0);
      // Twenty more failures.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(messages).toEqual([
        expect.stringMatching(
          /^SQLite checkpoints are failing \(SQLITE_NOTADB: .*\); the WAL file grows until they work again: check the free disk space/,
        ),
      ]);
      // A database again (in the same file, which the thread holds open): checkpoints work, and
      // it says so once.
      const made = `${path}-made`;
      const database = new SQLite(made);
      database.pragma("journal_mode = WAL");
      database.exec("create table t (x integer)");
      database.close();
      writeFileSync(notDatabase, readFileSync(made));
      await eventually(() => messages.length === 2);
      expect(messages[1]).toBe("SQLite checkpoints work again");
    } finally {
      await checkpointer.stop();
    }
  });
});
