import type { Kysely } from "kysely";
import { afterAll, beforeAll } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import type { Database } from "../../src/db/schema.js";
import { createTestDatabase, type DatabaseKindName, type TestDatabase } from "./databases.js";
import { captureLogger } from "./logs.js";

/** A fresh database of `kind` with every migration run, for the tests of one describe block. */
export function migratedDatabasePerFile(kind: DatabaseKindName): () => Kysely<Database> {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, captureLogger().logger);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });
  return () => handle.db;
}
