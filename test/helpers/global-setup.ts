import pg from "pg";
import { POSTGRES_URL, STALE_SCHEMA_MS, staleTestSchemas } from "./databases.js";

/**
 * Drops the PostgreSQL schemas that earlier, interrupted runs left behind (a run that is killed
 * never reaches its dispose). Only schemas older than STALE_SCHEMA_MS go, so a run going on in
 * parallel keeps its own.
 */
export default async function setup(): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  try {
    await client.connect();
  } catch {
    // No PostgreSQL: the tests that need it say so themselves.
    return;
  }
  try {
    const { rows } = await client.query<{ name: string }>(
      "select nspname as name from pg_namespace where nspname like 't\\_%'",
    );
    for (const schema of staleTestSchemas(
      rows.map((r) => r.name),
      Date.now() - STALE_SCHEMA_MS,
    )) {
      await client.query(`drop schema if exists "${schema}" cascade`);
    }
  } finally {
    await client.end();
  }
}
