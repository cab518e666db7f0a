import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { prepareQuery } from "../../src/db/prepared.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

describe.each(DATABASE_KINDS)("prepared queries on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, captureLogger().logger);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  it("runs with new values each time and keeps the values fixed at build time", async () => {
    const { db } = handle;
    const insert = prepareQuery(db, 2, (id: number, chat: string) =>
      db
        .insertInto("inbox")
        .values({
          update_id: id,
          chat_id: chat,
          update_json: "{}",
          status: "pending",
          received_at: "then",
        })
        .returning(["update_id", "chat_id", "status"]),
    );
    expect((await insert([1, "a"])).rows).toEqual([
      { update_id: 1, chat_id: "a", status: "pending" },
    ]);
    expect((await insert([2, "b"])).rows).toEqual([
      { update_id: 2, chat_id: "b", status: "pending" },
    ]);
    const byChat = prepareQuery(db, 1, (chat: string) =>
      db
        .selectFrom("inbox")
        .select("update_id")
        .where("chat_id", "=", chat)
        .where("chat_id", "!=", chat),
    );
    expect((await byChat(["a"])).rows).toEqual([]);
  });

  it("refuses a build that does not pass an argument through as a value", () => {
    const { db } = handle;
    expect(() =>
      prepareQuery(db, 2, (id: number, _unused: string) =>
        db.selectFrom("inbox").select("update_id").where("update_id", "=", id),
      ),
    ).toThrow(/argument 1 never reached the SQL/);
  });
});
