import { type Kysely, sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseDatabaseUrl } from "../../src/config.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { CONNECTION_GIVEN_UP } from "../../src/db/postgres-pool.js";
import type { Database } from "../../src/db/schema.js";
import { createTestDatabase, type TestDatabase } from "../helpers/databases.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";

const TIMEOUT_MS = 1_000;
const SLEEP_S = 1.5;

describe("PostgreSQL statements that get no answer", () => {
  let testDb: TestDatabase;
  let proxy: TcpProxy;
  let handle: DatabaseHandle | undefined;

  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    const target = testDb.target as { connectionString: string };
    const server = new URL(target.connectionString);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
  });
  afterEach(async () => {
    await handle?.close();
    handle = undefined;
  });
  afterAll(async () => {
    await proxy.close();
    await testDb.dispose();
  });

  /** The test database through the proxy, on one connection (a stuck one would be reused). */
  const openThroughProxy = (poolSize = 1) => {
    const url = new URL((testDb.target as { connectionString: string }).connectionString);
    url.host = `127.0.0.1:${proxy.port}`;
    handle = openDatabase(parseDatabaseUrl(url.href), { poolSize, queryTimeoutMs: TIMEOUT_MS });
    return handle;
  };
  const value = async (db: Kysely<Database>, n: number) =>
    (await sql<{ n: number }>`select ${n}::int as n`.execute(db)).rows[0]?.n;
  const sleep = (db: DatabaseHandle) => sql`select pg_sleep(${SLEEP_S})`.execute(db.db);

  it("fail after the timeout, and their connection is closed, not handed to the next", async () => {
    const db = openThroughProxy();
    expect(await value(db.db, 1)).toBe(1);
    proxy.silence();
    await expect(value(db.db, 2)).rejects.toThrow("Query read timeout");
    expect(await value(db.db, 3)).toBe(3);
  });

  it("end a transaction at once: its ROLLBACK does not wait behind the unanswered one", async () => {
    const db = openThroughProxy();
    const cutMidway = db.db.transaction().execute(async (trx) => {
      expect(await value(trx, 1)).toBe(1);
      proxy.silence();
      return value(trx, 2);
    });
    // Kysely throws the ROLLBACK's error: refused at once, where it would time out in its turn.
    await expect(cutMidway).rejects.toThrow(CONNECTION_GIVEN_UP);
    expect(await value(db.db, 3)).toBe(3);
  });

  it("may take as long as they need inside unbounded (migrations), and only there", async () => {
    const db = openThroughProxy(2);
    await expect(sleep(db)).rejects.toThrow("Query read timeout");
    const [inside, outside] = await Promise.allSettled([db.unbounded(() => sleep(db)), sleep(db)]);
    expect(inside.status).toBe("fulfilled");
    expect(outside).toMatchObject({
      status: "rejected",
      reason: { message: "Query read timeout" },
    });
  });
});
