import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  POSTGRES_URL,
  requirePostgres,
  STALE_SCHEMA_MS,
  staleTestSchemas,
} from "../helpers/databases.js";
import dropStaleSchemas from "../helpers/global-setup.js";

const name = (createdAt: number) =>
  `t_${process.pid}_${createdAt.toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

describe("test schemas left by interrupted runs", () => {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  const old = name(Date.now() - STALE_SCHEMA_MS - 60_000);
  const fresh = name(Date.now());

  beforeAll(async () => {
    requirePostgres();
    await client.connect();
  });
  afterAll(async () => {
    if (inject("postgresProblem")) return;
    await client.query(`drop schema if exists "${fresh}" cascade`);
    await client.end();
  });

  it("picks only well-formed names created before the cut-off", () => {
    expect(
      staleTestSchemas([old, fresh, "t_other", "public", "tx_1_1_1"], Date.now() - STALE_SCHEMA_MS),
    ).toEqual([old]);
  });

  it("are dropped before a run, while a run in progress keeps its own", async () => {
    for (const schema of [old, fresh]) await client.query(`create schema "${schema}"`);
    await dropStaleSchemas();
    const { rows } = await client.query<{ name: string }>(
      "select nspname as name from pg_namespace where nspname = any($1)",
      [[old, fresh]],
    );
    expect(rows.map((r) => r.name)).toEqual([fresh]);
  });
});
