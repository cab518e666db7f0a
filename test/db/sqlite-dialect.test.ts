import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { type Generated, Kysely, type Migration, Migrator } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  commitAtOnce,
  GroupCommitSqliteDialect,
  SOLO_WRITES_PER_TURN,
} from "../../src/db/sqlite-dialect.js";

type Tables = {
  notes: { id: Generated<number>; text: string };
  children: { id: Generated<number>; parent_id: number };
  guarded: { text: string };
};

describe("the group-commit SQLite dialect", () => {
  let dir: string;
  let path: string;
  let database: SQLite.Database;
  let db: Kysely<Tables>;
  /** Another connection to the same file: it sees only committed data. */
  let observer: SQLite.Database;

  const committedNotes = () =>
    (observer.prepare("select text from notes order by id").all() as { text: string }[]).map(
      (row) => row.text,
    );
  const note = (text: string) => db.insertInto("notes").values({ text }).execute();
  /** The writes of an event-loop turn that commit on their own, before any batch opens. */
  const soloNotes = () => Array.from({ length: SOLO_WRITES_PER_TURN }, (_, i) => note(`solo ${i}`));
  const soloTexts = Array.from({ length: SOLO_WRITES_PER_TURN }, (_, i) => `solo ${i}`);
  /** WAL frames written so far (a 32-byte header, then frames of a page and 24 bytes). */
  const walFrames = () => (statSync(`${path}-wal`).size - 32) / (4096 + 24);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "koroku-dialect-"));
    path = join(dir, "test.db");
    database = new SQLite(path);
    database.pragma("page_size = 4096");
    database.pragma("journal_mode = WAL");
    // The frame counts below read the WAL's size, which a checkpoint would reset.
    database.pragma("wal_autocheckpoint = 0");
    database.pragma("foreign_keys = ON");
    database.exec(`
      create table notes (id integer primary key, text text not null unique);
      create table children (
        id integer primary key,
        parent_id integer not null references notes (id) deferrable initially deferred
      );
      create table guarded (text text not null);
      create trigger guard before insert on guarded when new.text = 'undo everything'
        begin select raise(rollback, 'the guard undid the transaction'); end;
    `);
    db = new Kysely<Tables>({ dialect: new GroupCommitSqliteDialect(database) });
    observer = new SQLite(path, { readonly: true });
  });

  afterEach(async () => {
    observer.close();
    if (database.open) await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("commits the writes of one event-loop turn together, before any of them resolves", async () => {
    const start = walFrames();
    const writes = Array.from({ length: 50 }, (_, i) => note(`note ${i}`));
    expect(committedNotes()).toEqual([]);
    // The first writes of a turn commit on their own; the others share the next commit.
    await writes[SOLO_WRITES_PER_TURN - 1];
    expect(committedNotes()).toHaveLength(SOLO_WRITES_PER_TURN);
    await writes[SOLO_WRITES_PER_TURN];
    expect(committedNotes()).toHaveLength(50);
    await Promise.all(writes);
    const oneCommit = walFrames() - start;

    for (let i = 50; i < 100; i++) await note(`note ${i}`);
    const fiftyCommits = walFrames() - start - oneCommit;
    expect(oneCommit).toBeLessThan(10);
    expect(fiftyCommits).toBeGreaterThanOrEqual(50);
  });

  it("commits a write made with commitAtOnce before the turn ends, with the batch it joins", async () => {
    let turnEnded = false;
    setImmediate(() => {
      turnEnded = true;
    });
    const solo = soloNotes();
    const batched = note("batched");
    await commitAtOnce(() => note("at once"));
    expect(turnEnded).toBe(false);
    expect(committedNotes()).toEqual([...soloTexts, "batched", "at once"]);
    await Promise.all([...solo, batched]);
    // Alone, it commits on its own at once too.
    await commitAtOnce(() => note("alone"));
    expect(committedNotes().at(-1)).toBe("alone");
  });

  it("runs reads at once, outside a transaction, when no write is pending", async () => {
    await note("first");
    const read = db.selectFrom("notes").select("text").execute();
    expect(database.inTransaction).toBe(false);
    expect(await read).toEqual([{ text: "first" }]);
  });

  it("fails only the statement that broke a constraint; the rest of its batch commits", async () => {
    await note("taken");
    const results = await Promise.allSettled([note("a"), note("taken"), note("b")]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(committedNotes()).toEqual(["taken", "a", "b"]);
  });

  it("rejects every write of a batch whose COMMIT fails, and keeps none of them", async () => {
    const results = await Promise.allSettled([
      ...soloNotes(),
      note("lost"),
      db.insertInto("children").values({ parent_id: 999 }).execute(),
    ]);
    expect(results.slice(SOLO_WRITES_PER_TURN).map((result) => result.status)).toEqual([
      "rejected",
      "rejected",
    ]);
    expect(String((results[SOLO_WRITES_PER_TURN] as PromiseRejectedResult).reason)).toMatch(
      /the write was not committed \(FOREIGN KEY constraint failed\); it can be retried/,
    );
    expect(committedNotes()).toEqual(soloTexts);
    await note("after");
    expect(committedNotes()).toEqual([...soloTexts, "after"]);
  });

  it("rejects the writes a statement's rollback undid, and starts a new batch after it", async () => {
    const solo = soloNotes();
    const earlier = note("undone");
    const guard = db.insertInto("guarded").values({ text: "undo everything" }).execute();
    const later = note("kept");
    const results = await Promise.allSettled([...solo, earlier, guard, later]);
    expect(results.slice(SOLO_WRITES_PER_TURN).map((result) => result.status)).toEqual([
      "rejected",
      "rejected",
      "fulfilled",
    ]);
    expect(committedNotes()).toEqual([...soloTexts, "kept"]);
  });

  it("gives an explicit transaction the connection to itself", async () => {
    const pending = note("before");
    let outsideDone = false;
    const transaction = db.transaction().execute(async (trx) => {
      expect(committedNotes()).toEqual(["before"]);
      const outside = note("outside").then(() => {
        outsideDone = true;
      });
      await trx.insertInto("notes").values({ text: "inside" }).execute();
      await new Promise((resolve) => setImmediate(resolve));
      expect(outsideDone).toBe(false);
      expect(committedNotes()).toEqual(["before"]);
      // Returned inside an object: awaiting it here would wait for the end of this transaction.
      return { outside };
    });
    await pending;
    const { outside } = await transaction;
    await outside;
    expect(committedNotes()).toEqual(["before", "inside", "outside"]);
  });

  it("undoes a rolled-back transaction without touching the writes around it", async () => {
    await note("kept");
    const failed = db.transaction().execute(async (trx) => {
      await trx.insertInto("notes").values({ text: "rolled back" }).execute();
      throw new Error("changed my mind");
    });
    await expect(failed).rejects.toThrow("changed my mind");
    await note("also kept");
    expect(committedNotes()).toEqual(["kept", "also kept"]);
  });

  it("runs a migration in one transaction: one that fails halfway leaves nothing behind", async () => {
    const half: Migration = {
      async up(schema) {
        await schema.schema.createTable("half_done").addColumn("id", "integer").execute();
        throw new Error("crashed halfway");
      },
    };
    const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ half }) } });
    const { error, results } = await migrator.migrateToLatest();
    expect((error as Error).message).toBe("crashed halfway");
    expect(results).toEqual([{ migrationName: "half", direction: "Up", status: "Error" }]);
    const tables = observer
      .prepare("select name from sqlite_master where name = 'half_done'")
      .all();
    expect(tables).toEqual([]);
  });

  it("commits pending writes when the database is closed", async () => {
    const solo = soloNotes();
    const pending = note("last words");
    // Kysely hands the query to the driver a few promise hops later.
    for (let hop = 0; hop < 100 && !database.inTransaction; hop++) await Promise.resolve();
    expect(database.inTransaction).toBe(true);
    await db.destroy();
    await Promise.all([...solo, pending]);
    expect(committedNotes()).toEqual([...soloTexts, "last words"]);
  });
});
