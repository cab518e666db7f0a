import type { Kysely } from "kysely";
import { describe, expect, it } from "vitest";
import { precompiled } from "../../src/db/precompiled.js";
import type { Database } from "../../src/db/schema.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { migratedDatabasePerFile } from "../helpers/migrated-database.js";

describe.each(DATABASE_KINDS)("statements compiled once on %s", (kind) => {
  const database = migratedDatabasePerFile(kind);

  type Voice = { chatId: string; mode: string; at: string };
  const insertVoice = (db: Kysely<Database>, a: Voice) =>
    db
      .insertInto("conversation_voice")
      .values({ chat_id: a.chatId, mode: a.mode, updated_at: a.at })
      .returning("chat_id");
  const modeOf = (db: Kysely<Database>, a: { chatId: string }) =>
    db.selectFrom("conversation_voice").select("mode").where("chat_id", "=", a.chatId).limit(1);

  it("compiles what Kysely would for each run's values, and runs it", async () => {
    const db = database();
    const insert = precompiled(db, (a: Voice) => insertVoice(db, a));
    const select = precompiled(db, (a: { chatId: string }) => modeOf(db, a));
    for (const args of [
      { chatId: "1", mode: "on", at: "2026-12-03T10:00:00.000Z" },
      { chatId: "2:7", mode: "off", at: "2026-12-03T11:00:00.000Z" },
    ]) {
      const expected = insertVoice(db, args).compile();
      const compiled = insert.compile(args);
      expect([compiled.sql, compiled.parameters]).toEqual([expected.sql, expected.parameters]);
      expect((await insert.run(args)).rows).toEqual([{ chat_id: args.chatId }]);
    }
    expect(select.compile({ chatId: "2:7" }).parameters).toEqual(
      modeOf(db, { chatId: "2:7" }).compile().parameters,
    );
    expect((await select.run({ chatId: "2:7" })).rows).toEqual([{ mode: "off" }]);
    expect((await select.run({ chatId: "3" })).rows).toEqual([]);
  });

  it("runs in a transaction when given one, and reports the rows a write changed", async () => {
    const db = database();
    const setMode = precompiled(db, (a: { chatId: string; mode: string }) =>
      db.updateTable("conversation_voice").set({ mode: a.mode }).where("chat_id", "=", a.chatId),
    );
    const select = precompiled(db, (a: { chatId: string }) => modeOf(db, a));
    await expect(
      db.transaction().execute(async (trx) => {
        const changed = await setMode.run({ chatId: "1", mode: "auto" }, trx);
        expect(changed.numAffectedRows).toBe(1n);
        expect((await select.run({ chatId: "1" }, trx)).rows).toEqual([{ mode: "auto" }]);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect((await select.run({ chatId: "1" })).rows).toEqual([{ mode: "on" }]);
    expect((await setMode.run({ chatId: "none", mode: "on" })).numAffectedRows).toBe(0n);
  });

  it("refuses an argument that is not a value of the statement", () => {
    const db = database();
    const nested = precompiled(db, (a: { chat: { id: string } }) =>
      db.selectFrom("conversation_voice").select("mode").where("chat_id", "=", a.chat.id),
    );
    expect(() => nested.compile({ chat: { id: "1" } })).toThrow(
      'argument "chat" is not one of its values',
    );
  });
});
