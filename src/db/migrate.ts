import { type Kysely, PostgresAdapter, sql } from "kysely";
import { type Migration, type MigrationResultSet, Migrator } from "kysely/migration";
import { migrations } from "../../migrations/index.js";
import type { Logger } from "../logger.js";
import { backoffDelay, pause } from "../retry/backoff.js";
import type { Database } from "./schema.js";

const SQLITE_BUSY = /SQLITE_BUSY|database is locked/i;
// Another process's migration holds SQLite's write lock for well under a second.
const BUSY_BACKOFF = { baseMs: 50, maxMs: 1_000 };

/**
 * The PostgreSQL schema to keep Kysely's own tables in: the connection's current one. Without it
 * Kysely looks for its tables in every schema, finds another schema's (a second deployment or
 * test run on the same database) and then fails to use its own.
 */
async function postgresSchema(db: Kysely<Database>): Promise<string | undefined> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return undefined;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema;
}

/**
 * Kysely's migrator, its own tables in the connection's schema: every migrator must be built so,
 * or it uses another schema's tables (a test run killed before it dropped its schema).
 */
export async function createMigrator(
  db: Kysely<Database>,
  list: Record<string, Migration> = migrations,
): Promise<Migrator> {
  return migratorIn(db, await postgresSchema(db), list);
}

function migratorIn(
  db: Kysely<Database>,
  schema: string | undefined,
  list: Record<string, Migration> = migrations,
): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => list },
    migrationTableSchema: schema,
  });
}

const isBusy = (error: unknown) => error instanceof Error && SQLITE_BUSY.test(error.message);

// PostgreSQL's answers for a schema, and for a table or a column, that is not there.
const SCHEMA_GONE = "3F000";
const GONE = new Set(["42P01", "42703"]);

/**
 * Whether the migration failed while Kysely still looked at the catalog, outside any migration,
 * because the catalog changed under that look. Kysely lists every schema's tables and columns,
 * before it takes its lock, and PostgreSQL fails the list when one of them is dropped or renamed
 * meanwhile: another deployment or test run migrating or cleaning up its schema, or a replica
 * migrating this one. Looking again sees the change made. A missing schema is looked at again only
 * when it is another's: this one's being gone is the operator's to fix.
 */
export const otherSchemaChanged = (result: MigrationResultSet, ours: string | undefined) => {
  const { error } = result;
  if (ours === undefined || result.results !== undefined || !(error instanceof Error)) return false;
  const code = String((error as { code?: unknown }).code);
  if (code === SCHEMA_GONE) return !error.message.includes(`"${ours}"`);
  return GONE.has(code);
};

/**
 * Brings the schema to the latest migration, in one transaction on both databases. On PostgreSQL,
 * Kysely's migrator holds an advisory lock, so replicas starting together take turns. On SQLite a
 * second process waits for the first's write lock, or hits SQLITE_BUSY while Kysely creates its own
 * tables; it retries, then finds nothing left to do. On PostgreSQL it also retries when another
 * schema changed under Kysely's look at every schema's tables.
 */
export async function migrateToLatest(db: Kysely<Database>, logger: Logger): Promise<void> {
  const schema = await postgresSchema(db);
  const migrator = migratorIn(db, schema);
  let result: MigrationResultSet = await migrator.migrateToLatest();
  for (
    let attempt = 1;
    attempt < 20 && (isBusy(result.error) || otherSchemaChanged(result, schema));
    attempt++
  ) {
    await pause(backoffDelay(attempt, BUSY_BACKOFF, Math.random));
    result = await migrator.migrateToLatest();
  }
  for (const r of result.results ?? []) {
    if (r.status === "Success") logger.info({ migration: r.migrationName }, "migration applied");
    if (r.status === "Error") logger.error({ migration: r.migrationName }, "migration failed");
  }
  if (result.error) {
    const reason = result.error instanceof Error ? result.error.message : String(result.error);
    throw new Error(
      `Database migration failed: ${reason}. Check DATABASE_URL and that the database is reachable.`,
      { cause: result.error },
    );
  }
}
