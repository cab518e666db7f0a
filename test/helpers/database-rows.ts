import SQLite from "better-sqlite3";
import pg from "pg";
import type { TestDatabase } from "./databases.js";

type Row = Record<string, unknown>;

/** Reads the service's database directly (never through a test proxy); `?` marks parameters. */
export async function query(
  db: TestDatabase,
  statement: string,
  ...params: unknown[]
): Promise<Row[]> {
  if (db.target.kind === "sqlite") {
    const sqlite = new SQLite(db.target.path, { readonly: true, fileMustExist: true });
    try {
      return sqlite.prepare(statement).all(...params) as Row[];
    } finally {
      sqlite.close();
    }
  }
  const client = new pg.Client({ connectionString: db.target.connectionString });
  await client.connect();
  try {
    let n = 0;
    const numbered = statement.replace(/\?/g, () => `$${++n}`);
    return (await client.query(numbered, params)).rows as Row[];
  } finally {
    await client.end();
  }
}

/** The inbox status of update `updateId`, read as query does. */
export async function inboxStatus(db: TestDatabase, updateId: number): Promise<unknown> {
  const [row] = await query(db, "select status from inbox where update_id = ?", updateId);
  return row?.status;
}
