import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * A stop (the draft's button, /stop) that reached a replica other than the one running the update:
 * set here, it reaches the running replica at its next lease renewal even when the PostgreSQL
 * notification that normally carries it at once was missed.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("inbox")
    .addColumn("stop_requested", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").dropColumn("stop_requested").execute();
}
