import { type Migration, Migrator, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";

describe.each(DATABASE_KINDS)("a database opened on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  /** Whether the connection's schema has this table: a query on it fails when it has not. */
  const exists = (table: string) =>
    sql`select 1 from ${sql.table(table)}`.execute(handle.db).then(
      () => true,
      () => false,
    );

  it("runs migrations in one transaction: one that fails halfway leaves nothing behind", async () => {
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
    const migrator = new Migrator({
      db: handle.db,
      provider: { getMigrations: async () => ({ "1_created": created, "2_half": half }) },
    });
    const { error, results } = await migrator.migrateToLatest();
    expect((error as Error).message).toBe("crashed halfway");
    expect(results?.map((r) => r.status)).toEqual(["Success", "Error"]);
    expect(await exists("created_first")).toBe(false);
    expect(await exists("half_done")).toBe(false);
  });
});
