import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type DatabaseTarget, parseDatabaseUrl } from "../src/config.js";
import type { DatabaseKind } from "../src/db/connect.js";

/** The databases every database benchmark runs on, in this order, unless told fewer. */
export const BENCH_DATABASES: readonly DatabaseKind[] = ["sqlite", "postgres"];

/** "sqlite,postgres" → the databases named, in BENCH_DATABASES' order; undefined → all. */
export function parseBenchDatabases(list: string | undefined): readonly DatabaseKind[] {
  if (list === undefined || list.trim() === "") return BENCH_DATABASES;
  const names = list.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(BENCH_DATABASES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown database ${unknown.join(", ")} in BENCH_DATABASES: choose from ${BENCH_DATABASES.join(", ")}.`,
    );
  }
  return BENCH_DATABASES.filter((database) => names.includes(database));
}

/** What a benchmark that runs on each database is given. */
export type DatabaseBenchOptions = {
  databases: readonly DatabaseKind[];
  postgresUrl: string;
  /** Progress lines, so a long run visibly moves. */
  progress?: (line: string) => void;
};

export type BenchDatabase = {
  target: DatabaseTarget;
  dispose(): Promise<void>;
};

async function runAdminStatement(postgresUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query(statement);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `PostgreSQL at ${postgresUrl} failed "${statement}": ${reason}. Start PostgreSQL or point BENCH_POSTGRES_URL at one you may create schemas in.`,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * An empty database of the benchmark's own: a temporary SQLite file, or a PostgreSQL schema
 * selected through the connection's search_path, so a run never touches real data or another run.
 */
export async function createBenchDatabase(
  kind: DatabaseKind,
  postgresUrl: string,
): Promise<BenchDatabase> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "koroku-bench-"));
    return {
      target: parseDatabaseUrl(`sqlite:${join(dir, "bench.db")}`),
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `bench_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await runAdminStatement(postgresUrl, `create schema "${schema}"`);
  const separator = postgresUrl.includes("?") ? "&" : "?";
  const options = encodeURIComponent(`-c search_path=${schema}`);
  return {
    target: parseDatabaseUrl(`${postgresUrl}${separator}options=${options}`),
    dispose: () => runAdminStatement(postgresUrl, `drop schema if exists "${schema}" cascade`),
  };
}

/** Runs a benchmark on each database asked for, one after the other, and gathers its rows. */
export async function onEachDatabase<Row>(
  options: DatabaseBenchOptions,
  run: (database: DatabaseKind, options: DatabaseBenchOptions) => Promise<Row[]>,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const database of options.databases) rows.push(...(await run(database, options)));
  return rows;
}
