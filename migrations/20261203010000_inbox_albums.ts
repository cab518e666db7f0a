import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Albums: Telegram sends each item of an album (`media_group_id`) as an update of its own, and
 * the items run as one turn. `media_group_id` lets the claim wait until an album has been quiet
 * for a moment; `merged_into` names the update whose turn took an item in (on that update itself:
 * the album's items were fixed, so a run after a crash takes the same ones).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").addColumn("media_group_id", "text").execute();
  await db.schema.alterTable("inbox").addColumn("merged_into", "bigint").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").dropColumn("merged_into").execute();
  await db.schema.alterTable("inbox").dropColumn("media_group_id").execute();
}
