import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { withStatementCache } from "../../src/db/connect.js";

type Notes = { notes: { id: number; body: string | null } };

describe("SQLite statements kept prepared", () => {
  let db: Kysely<Notes> | undefined;
  afterEach(async () => {
    await db?.destroy();
  });

  /** A database whose compiles are counted, behind the cache, under Kysely's stock dialect. */
  function countingDatabase() {
    const database = new SQLite(":memory:");
    const compiled: string[] = [];
    const prepare = database.prepare.bind(database);
    database.prepare = ((source: string) => {
      compiled.push(source);
      return prepare(source);
    }) as typeof database.prepare;
    db = new Kysely<Notes>({
      dialect: new SqliteDialect({ database: withStatementCache(database) }),
    });
    return { db, compiled };
  }

  it("compiles each query once, however often it runs and with whatever values", async () => {
    const { db, compiled } = countingDatabase();
    await db.schema
      .createTable("notes")
      .addColumn("id", "integer")
      .addColumn("body", "text")
      .execute();
    for (let i = 0; i < 50; i++)
      await db
        .insertInto("notes")
        .values({ id: i, body: `note ${i}` })
        .execute();
    const found = [];
    for (let i = 0; i < 50; i += 7) {
      found.push(
        await db.selectFrom("notes").select("body").where("id", "=", i).executeTakeFirst(),
      );
    }
    expect(found.map((row) => row?.body)).toEqual(
      [0, 7, 14, 21, 28, 35, 42, 49].map((i) => `note ${i}`),
    );
    expect(compiled.filter((source) => source.startsWith("insert"))).toHaveLength(1);
    expect(compiled.filter((source) => source.startsWith("select"))).toHaveLength(1);
  });

  it("runs a kept statement against the schema as it is now, after a migration changed it", async () => {
    const { db } = countingDatabase();
    await db.schema.createTable("notes").addColumn("id", "integer").execute();
    await db.insertInto("notes").values({ id: 1 }).execute();
    const all = () => sql<Record<string, unknown>>`select * from notes`.execute(db);
    expect((await all()).rows).toEqual([{ id: 1 }]);
    await db.schema
      .alterTable("notes")
      .addColumn("body", "text", (c) => c.defaultTo("none"))
      .execute();
    expect((await all()).rows).toEqual([{ id: 1, body: "none" }]);
  });

  it("runs a kept statement again after it failed, and after a rollback", async () => {
    const { db } = countingDatabase();
    await db.schema
      .createTable("notes")
      .addColumn("id", "integer", (c) => c.primaryKey())
      .addColumn("body", "text")
      .execute();
    const add = (id: number) =>
      db
        .insertInto("notes")
        .values({ id, body: `note ${id}` })
        .execute();
    await add(1);
    await expect(add(1)).rejects.toThrow(/UNIQUE constraint failed/);
    await add(2);
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto("notes").values({ id: 3, body: "rolled back" }).execute();
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    await add(4);
    const ids = await db.selectFrom("notes").select("id").orderBy("id").execute();
    expect(ids.map((row) => row.id)).toEqual([1, 2, 4]);
  });
});
