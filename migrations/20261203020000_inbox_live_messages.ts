import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * The messages an answer was shown in while it was written (edit mode: one message sent early and
 * edited in place, and those it grew into), as a JSON array of message ids. A run after a crash
 * edits them into the answer instead of sending it a second time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").addColumn("live_messages", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").dropColumn("live_messages").execute();
}
