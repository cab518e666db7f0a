import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/** Topics /new opened that their first message has yet to name (src/telegram/commands/new-topics.ts). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("pending_topic_names")
    .addColumn("conversation", "text", (c) => c.primaryKey())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("pending_topic_names").execute();
}
