import { type Kysely, sql } from "kysely";
import type { DatabaseKind } from "../../src/db/connect.js";
import type { Database } from "../../src/db/schema.js";

/**
 * Makes every insert into the inbox fail as a full disk makes it fail, while reads go on working;
 * returns what undoes it. SQLite says "database or disk is full" (SQLITE_FULL's message), and
 * PostgreSQL raises SQLSTATE 53100 disk_full, as each does when a write finds no room.
 */
export async function fillDiskForInbox(
  db: Kysely<Database>,
  kind: DatabaseKind,
): Promise<() => Promise<void>> {
  if (kind === "sqlite") {
    await sql`create trigger disk_full before insert on inbox
      begin select raise(abort, 'database or disk is full'); end`.execute(db);
    return async () => {
      await sql`drop trigger disk_full`.execute(db);
    };
  }
  await sql`create function disk_full() returns trigger language plpgsql as $$
    begin
      raise exception 'could not extend file "base/16384/16385": No space left on device'
        using errcode = 'disk_full';
    end $$`.execute(db);
  await sql`create trigger disk_full before insert on inbox
    for each row execute function disk_full()`.execute(db);
  return async () => {
    await sql`drop trigger disk_full on inbox`.execute(db);
    await sql`drop function disk_full()`.execute(db);
  };
}
