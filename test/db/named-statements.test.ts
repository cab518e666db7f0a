import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { namedStatementPool } from "../../src/db/named-statements.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

type Prepared = { name: string; statement: string };

describe("named statements on PostgreSQL", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  // One connection, so what the server holds for it can be read back through the pool.
  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    handle = openDatabase(testDb.target, { poolSize: 1 });
    await migrateToLatest(handle.db, captureLogger().logger);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  const prepared = async () =>
    (
      await sql<Prepared>`select name, statement from pg_prepared_statements order by name`.execute(
        handle.db,
      )
    ).rows;

  it("parses a statement with parameters once per connection, in the URL's schema", async () => {
    const before = await prepared();
    const lookup = (chat: string) =>
      handle.db.selectFrom("inbox").select("update_id").where("chat_id", "=", chat).execute();
    expect(await lookup("a")).toEqual([]);
    expect(await lookup("b")).toEqual([]);
    const added = (await prepared()).filter((p) => !before.some((b) => b.name === p.name));
    expect(added).toHaveLength(1);
    expect(added[0]?.name).toMatch(/^koroku_\d+$/);
    expect(added[0]?.statement).toContain('from "inbox" where "chat_id" = $1');
  });

  it("leaves statements without parameters unnamed", async () => {
    const before = await prepared();
    await sql`select 1 as one`.execute(handle.db);
    expect(await prepared()).toEqual(before);
  });

  it("plans every run with its own values", async () => {
    const { rows } = await sql<{
      mode: string;
    }>`select current_setting('plan_cache_mode') as mode`.execute(handle.db);
    expect(rows).toEqual([{ mode: "force_custom_plan" }]);
  });
});

describe("queries in src/", () => {
  it("name their columns: a parsed statement returning * fails once a column is added", () => {
    const files = readdirSync("src", { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".ts"),
    );
    const starry = files.filter((f) =>
      /\.(selectAll|returningAll)\(/.test(readFileSync(join("src", f), "utf8")),
    );
    expect(files.length).toBeGreaterThan(10);
    expect(starry).toEqual([]);
  });
});

describe("namedStatementPool", () => {
  it("runs statements past its cap unnamed, with the right results", async () => {
    const testDb = await createTestDatabase("postgres");
    const pool = namedStatementPool(new pg.Pool({ connectionString: testDb.url, max: 1 }), 1);
    const client = await pool.connect();
    try {
      const first = await client.query<{ n: number }>("select $1::int as n", [1]);
      const second = await client.query<{ n: number }>("select $1::int + 1 as n", [1]);
      const again = await client.query<{ n: number }>("select $1::int as n", [5]);
      expect([first.rows, second.rows, again.rows]).toEqual([[{ n: 1 }], [{ n: 2 }], [{ n: 5 }]]);
      const names = await client.query<{ name: string }>(
        "select name from pg_prepared_statements",
        [],
      );
      expect(names.rows).toEqual([{ name: "koroku_0" }]);
    } finally {
      client.release();
      await pool.end();
      await testDb.dispose();
    }
  });
});
