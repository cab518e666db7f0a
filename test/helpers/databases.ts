import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type DatabaseTarget, parseDatabaseUrl } from "../../src/config.js";

export const DATABASE_KINDS = ["sqlite", "postgres"] as const;
export type DatabaseKindName = (typeof DATABASE_KINDS)[number];

/** CI has PostgreSQL on 127.0.0.1:5432 with trust auth and a `test` database. */
export const POSTGRES_URL =
  process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

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
