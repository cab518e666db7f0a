import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { type DatabaseTarget, parseDatabaseUrl } from "../../src/config.js";

export const DATABASE_KINDS = ["sqlite", "postgres"] as const;
export type DatabaseKindName = (typeof DATABASE_KINDS)[number];

/** CI has PostgreSQL on 127.0.0.1:5432 with trust auth and a `test` database. */
export const POSTGRES_URL =
  process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** What to do when the tests' PostgreSQL cannot be reached, in one line. */
export function postgresUnreachable(error: unknown): string {
  const url = new URL(POSTGRES_URL);
  if (url.password) url.password = "***";
  const code = (error as { code?: string }).code ?? (error as Error).message;
  return `PostgreSQL for the tests is not reachable at ${url.href} (${code}): start one with trust authentication and a database "test" on 127.0.0.1:5432 (e.g. docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16), or set TEST_POSTGRES_URL to one the tests may create schemas in.`;
}

/**
 * Fails a test that needs PostgreSQL with the global set-up's one line when it could not connect,
 * instead of a bare ECONNREFUSED (and the follow-on errors of hooks that never set up).
 */
export function requirePostgres(): void {
  const problem = inject("postgresProblem");
  if (!problem) return;
  const error = new Error(problem);
  // The line says it all: no stack, which would only point here.
  error.stack = `Error: ${problem}`;
  throw error;
}

/** Test schemas are named t_<pid>_<creation time in base 36>_<random>. */
const testSchemaName = () =>
  `t_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

/** A test schema this old belongs to a run that died: no test file runs for an hour. */
export const STALE_SCHEMA_MS = 60 * 60 * 1000;

/** The test schemas among `names` created before `before` (ms since the epoch). */
export function staleTestSchemas(names: readonly string[], before: number): string[] {
  return names.filter((name) => {
    const match = /^t_\d+_([0-9a-z]+)_[0-9a-z]+$/.exec(name);
    return match !== null && Number.parseInt(match[1] as string, 36) < before;
  });
}

export type TestDatabase = {
  kind: DatabaseKindName;
  /** A DATABASE_URL for a service process. */
  url: string;
  target: DatabaseTarget;
  dispose(): Promise<void>;
};

/**
 * A fresh, empty database: a temporary SQLite file, or a PostgreSQL schema of its own (selected
 * through the connection's search_path), so parallel test files and runs never collide.
 */
export async function createTestDatabase(kind: DatabaseKindName): Promise<TestDatabase> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "koroku-db-"));
    const url = `sqlite:${join(dir, "agent.db")}`;
    return {
      kind,
      url,
      target: parseDatabaseUrl(url),
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  requirePostgres();
  const schema = testSchemaName();
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema "${schema}"`);
  await admin.end();
  const url = `${POSTGRES_URL}${POSTGRES_URL.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    kind,
    url,
    target: parseDatabaseUrl(url),
    dispose: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}
