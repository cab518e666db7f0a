import pg from "pg";
import type { TestProject } from "vitest/node";
import {
  POSTGRES_URL,
  postgresUnreachable,
  STALE_SCHEMA_MS,
  staleTestSchemas,
} from "./databases.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Why the tests' PostgreSQL cannot be used, in one line; empty when it can. */
    postgresProblem: string;
  }
}

/**
 * Drops the PostgreSQL schemas that earlier, interrupted runs left behind (a run that is killed
 * never reaches its dispose). Only schemas older than STALE_SCHEMA_MS go, so a run going on in
 * parallel keeps its own.
 */
export default async function setup(project?: TestProject): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  try {
    await client.connect();
    project?.provide("postgresProblem", "");
  } catch (error) {
    // No PostgreSQL: the tests that need it fail with this line (see createTestDatabase).
    project?.provide("postgresProblem", postgresUnreachable(error));
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
