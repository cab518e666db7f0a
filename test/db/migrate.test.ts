import type { MigrationResultSet } from "kysely/migration";
import { describe, expect, it } from "vitest";
import { otherSchemaChanged } from "../../src/db/migrate.js";

const gone = (code: string, message: string): MigrationResultSet => ({
  error: Object.assign(new Error(message), { code }),
});

describe("a migration on a PostgreSQL database shared with other schemas", () => {
  // The column's case is the error CI met: Kysely's list had seen tool_approvals.status in the
  // catalog, and pg_get_serial_sequence then looked for it after another run's migration renamed it.
  // Kysely's migrator lists every schema's tables and columns; PostgreSQL fails that list when
  // another schema changes under it (another deployment or test run migrating or cleaning up).
  it("looks again when the catalog changed while Kysely listed every schema's tables", () => {
    expect(
      otherSchemaChanged(gone("3F000", 'schema "t_someone_else" does not exist'), "t_mine"),
    ).toBe(true);
    expect(otherSchemaChanged(gone("42P01", 'relation "t.x" does not exist'), "t_mine")).toBe(true);
    expect(
      otherSchemaChanged(gone("42703", 'column "a" of relation "t" does not exist'), "t_mine"),
    ).toBe(true);
    // A replica migrating this schema while Kysely looks changes it just the same.
    expect(
      otherSchemaChanged(
        gone("42P01", 'relation "t_mine.kysely_migration" does not exist'),
        "t_mine",
      ),
    ).toBe(true);
  });

  it("does not when its own schema is missing, on SQLite, for another error, or once migrations ran", () => {
    expect(otherSchemaChanged(gone("3F000", 'schema "t_mine" does not exist'), "t_mine")).toBe(
      false,
    );
    expect(otherSchemaChanged(gone("3F000", 'schema "t_other" does not exist'), undefined)).toBe(
      false,
    );
    expect(otherSchemaChanged(gone("42501", "permission denied"), "t_mine")).toBe(false);
    expect(otherSchemaChanged({}, "t_mine")).toBe(false);
    const failedMigration: MigrationResultSet = {
      ...gone("42703", 'column "status" does not exist'),
      results: [{ migrationName: "0001", direction: "Up", status: "Error" }],
    };
    expect(otherSchemaChanged(failedMigration, "t_mine")).toBe(false);
  });
});
