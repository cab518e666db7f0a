import SQLite from "better-sqlite3";
import { CompiledQuery, type Kysely, sql } from "kysely";
import type { Migration } from "kysely/migration";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createMigrator, migrateToLatest } from "../../src/db/migrate.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

/**
 * A schema holding Kysely's migration tables beside the test's own, as a run killed less than an
 * hour ago leaves it (older ones are dropped before a run): a migrator that looks in every schema
 * finds its tables there and then fails to use its own.
 */
async function leaveMigratedSchema(): Promise<TestDatabase> {
  const left = await createTestDatabase("postgres");
  const handle = openDatabase(left.target);
  try {
    await migrateToLatest(handle.db, captureLogger().logger);
  } finally {
    await handle.close();
  }
  return left;
}

describe.each(DATABASE_KINDS)("a database opened on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let leftBehind: TestDatabase | undefined;

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    if (kind === "postgres") leftBehind = await leaveMigratedSchema();
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
    await leftBehind?.dispose();
  });

  /** Whether the connection's schema has this table: a query on it fails when it has not. */
  const exists = (table: string) =>
    sql`select 1 from ${sql.table(table)}`.execute(handle.db).then(
      () => true,
      () => false,
    );

  it("runs migrations in one transaction: one that fails halfway leaves nothing behind (beside another schema's Kysely tables)", async () => {
    const created: Migration = {
      async up(db) {
        await db.schema.createTable("created_first").addColumn("id", "integer").execute();
      },
    };
    const half: Migration = {
      async up(db) {
        await db.schema.createTable("half_done").addColumn("id", "integer").execute();
        throw new Error("crashed halfway");
      },
    };
    const migrator = await createMigrator(handle.db, { "1_created": created, "2_half": half });
    const { error, results } = await migrator.migrateToLatest();
    expect((error as Error).message).toBe("crashed halfway");
    expect(results?.map((r) => r.status)).toEqual(["Success", "Error"]);
    expect(await exists("created_first")).toBe(false);
    expect(await exists("half_done")).toBe(false);
  });
});

describe("a SQLite file shared with another connection", () => {
  it("takes the write lock when a transaction begins: a read first cannot make its write fail", async () => {
    const testDb = await createTestDatabase("sqlite");
    const handle = openDatabase(testDb.target);
    if (testDb.target.kind !== "sqlite") throw new Error("expected a SQLite file");
    const other = new SQLite(testDb.target.path);
    other.pragma("busy_timeout = 0");
    try {
      await sql`create table counter (n integer)`.execute(handle.db);
      await sql`insert into counter values (0)`.execute(handle.db);
      let otherWrite = "";
      await handle.db.transaction().execute(async (trx) => {
        await sql`select n from counter`.execute(trx);
        // Begun deferred, this commit would go through, and the write below would then fail
        // (SQLITE_BUSY_SNAPSHOT): the transaction read a state that is no longer the newest.
        try {
          other.prepare("update counter set n = 10").run();
          otherWrite = "committed";
        } catch (error) {
          otherWrite = (error as { code?: string }).code ?? String(error);
        }
        await sql`update counter set n = n + 1`.execute(trx);
      });
      expect(otherWrite).toBe("SQLITE_BUSY");
      expect(other.prepare("select n from counter").pluck().get()).toBe(1);
    } finally {
      other.close();
      await handle.close();
      await testDb.dispose();
    }
  });
});

describe("the SQLite connection under many statements at once", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  beforeAll(async () => {
    testDb = await createTestDatabase("sqlite");
    handle = openDatabase(testDb.target);
    await sql`create table log (n integer)`.execute(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  // Built statements take Kysely's way; compiled ones run on the database go straight to SQLite
  // when the connection is free, and must wait like the others when it is not.
  const insertions: Record<string, (n: number) => Promise<unknown>> = {
    built: (n) => sql`insert into log values (${n})`.execute(handle.db),
    compiled: (n) => handle.db.executeQuery(CompiledQuery.raw("insert into log values (?)", [n])),
  };

  it.each(Object.keys(insertions))(
    "runs no %s statement inside another's transaction, and each in the order it was asked",
    async (way) => {
      const insert = insertions[way] as (n: number) => Promise<unknown>;
      await sql`delete from log`.execute(handle.db);
      let inside: () => void = () => {};
      const begun = new Promise<void>((resolve) => {
        inside = resolve;
      });
      const rolledBack = handle.db.transaction().execute(async (trx) => {
        await sql`insert into log values (0)`.execute(trx);
        inside();
        // Statements asked for meanwhile wait for the transaction: rolled back, it takes only its own.
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error("roll back");
      });
      await begun;
      const others = Array.from({ length: 50 }, (_, i) => insert(i + 1));
      await expect(rolledBack).rejects.toThrow("roll back");
      await Promise.all(others);
      await insert(51);
      const { rows } = await sql<{ n: number }>`select n from log order by rowid`.execute(
        handle.db,
      );
      expect(rows.map((row) => row.n)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
    },
  );

  const compiled = (source: string) => handle.db.executeQuery(CompiledQuery.raw(source));
  const logged = async () =>
    (await sql<{ n: number }>`select n from log order by rowid`.execute(handle.db)).rows.map(
      (row) => row.n,
    );

  it("runs the compiled statements asked in one turn of the event loop in one transaction", async () => {
    await sql`delete from log`.execute(handle.db);
    const asked = [
      compiled("insert into log values (1)"),
      // Inside the batch's transaction another cannot begin; run alone, it would.
      compiled("begin"),
      compiled("insert into log values (2)"),
    ];
    const [first, begin, second] = await Promise.allSettled(asked);
    expect(begin).toMatchObject({
      status: "rejected",
      reason: { message: "cannot start a transaction within a transaction" },
    });
    expect([first?.status, second?.status]).toEqual(["fulfilled", "fulfilled"]);
    expect(await logged()).toEqual([1, 2]);
  });

  it("fails a statement of a batch alone: the others are committed", async () => {
    await sql`delete from log`.execute(handle.db);
    const asked = [
      compiled("insert into log values (1)"),
      compiled("insert into no_such_table values (1)"),
      compiled("insert into log values (2)"),
    ];
    await expect(asked[1]).rejects.toThrow("no such table: no_such_table");
    await Promise.all([asked[0], asked[2]]);
    expect(await logged()).toEqual([1, 2]);
  });

  it("runs a batch again one statement at a time when a statement of it ends its transaction", async () => {
    await sql`delete from log`.execute(handle.db);
    await sql`create table if not exists fragile (n integer)`.execute(handle.db);
    await sql`create trigger if not exists fragile_negative before insert on fragile when new.n < 0
      begin select raise(rollback, 'negative'); end`.execute(handle.db);
    const asked = [
      compiled("insert into log values (1)"),
      compiled("insert into fragile values (-1)"),
      compiled("insert into log values (2)"),
    ];
    await expect(asked[1]).rejects.toThrow("negative");
    await Promise.all([asked[0], asked[2]]);
    expect(await logged()).toEqual([1, 2]);
  });

  it("runs a built statement asked after a batch after it", async () => {
    await sql`delete from log`.execute(handle.db);
    const batch = compiled("insert into log values (1)");
    await sql`insert into log values (2)`.execute(handle.db);
    await batch;
    expect(await logged()).toEqual([1, 2]);
  });

  it("streams a query's rows one at a time", async () => {
    await sql`delete from log`.execute(handle.db);
    await sql`insert into log values (1), (2), (3)`.execute(handle.db);
    const logDb = handle.db as unknown as Kysely<{ log: { n: number } }>;
    const streamed: number[] = [];
    for await (const row of logDb.selectFrom("log").select("n").stream(1)) streamed.push(row.n);
    expect(streamed).toEqual([1, 2, 3]);
  });

  it("gives a compiled statement run at once what Kysely's connection gives", async () => {
    await sql`delete from log`.execute(handle.db);
    const inserted = await handle.db.executeQuery(
      CompiledQuery.raw("insert into log values (?), (?)", [7, 8]),
    );
    expect(inserted).toEqual({ insertId: expect.any(BigInt), numAffectedRows: 2n, rows: [] });
    const read = await handle.db.executeQuery(CompiledQuery.raw("select n from log order by n"));
    expect(read.rows).toEqual([{ n: 7 }, { n: 8 }]);
  });
});

describe.each(DATABASE_KINDS)("failed statements on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  const errors: unknown[] = [];
  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target, { onQueryError: (error) => errors.push(error) });
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  it("are told to onQueryError once each, whichever way they ran, and still thrown", async () => {
    await sql`select 1`.execute(handle.db);
    await expect(
      handle.db.executeQuery(CompiledQuery.raw("select * from missing_at_once")),
    ).rejects.toThrow(/missing_at_once/);
    await expect(sql`select * from missing_built`.execute(handle.db)).rejects.toThrow(
      /missing_built/,
    );
    await expect(
      handle.db
        .transaction()
        .execute((trx) => trx.executeQuery(CompiledQuery.raw("select * from missing_in_trx"))),
    ).rejects.toThrow(/missing_in_trx/);
    expect(errors.map((error) => String(error))).toEqual([
      expect.stringContaining("missing_at_once"),
      expect.stringContaining("missing_built"),
      expect.stringContaining("missing_in_trx"),
    ]);
  });
});
