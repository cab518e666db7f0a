import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * How many messages of an update's answer have reached Telegram. A long answer goes out as several
 * messages; a run that takes over after a failure among them sends only the rest.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("inbox")
    .addColumn("delivered", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").dropColumn("delivered").execute();
}
