import { existsSync, statSync } from "node:fs";
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startCheckpointer } from "../../src/db/checkpointer.js";
import { openDatabase } from "../../src/db/connect.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { eventually } from "../helpers/service-process.js";

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

  it("reports a checkpointer that cannot run", async () => {
    const messages: string[] = [];
    const checkpointer = startCheckpointer(`${path}-missing/agent.db`, {
      onError: (message) => messages.push(message),
    });
    await eventually(() => messages.length >= 2);
    await checkpointer.stop();
    expect(messages).toEqual([
      expect.stringMatching(/^checkpointer failed: .*directory does not exist/),
      "checkpointer stopped (exit code 1)",
    ]);
  });
});
