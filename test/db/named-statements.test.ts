import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

describe("PostgreSQL queries as named prepared statements", () => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    // One connection, so the statements this test runs and the ones it looks at share it.
    handle = openDatabase(testDb.target, { poolSize: 1 });
    await migrateToLatest(handle.db, captureLogger().logger);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  it("prepares a query with parameters once per connection and runs it with new values", async () => {
    const { db } = handle;
    const idsOf = (chat: string) =>
      db.selectFrom("messages").select("id").where("chat_id", "=", chat).execute();
    for (const chat of ["a", "b"]) {
      await db
        .insertInto("messages")
        .values({
          chat_id: chat,
          kind: "session",
          event_json: "{}",
          estimated_tokens: 0,
          search_text: "",
          created_at: "t",
        })
        .execute();
    }
    const [a, b] = [await idsOf("a"), await idsOf("b")];
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(a[0]?.id).not.toBe(b[0]?.id);

    const prepared = await sql<{ name: string; statement: string }>`
      select name, statement from pg_prepared_statements`.execute(db);
    const selects = prepared.rows.filter((r) =>
      r.statement.startsWith('select "id" from "messages"'),
    );
    expect(selects).toHaveLength(1);
    expect(selects[0]?.name).toMatch(/^koroku_\d+$/);
    // A statement without parameters (like the one above) is not kept.
    expect(prepared.rows.some((r) => r.statement.includes("pg_prepared_statements"))).toBe(false);
  });
});
