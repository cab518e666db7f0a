import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * The files tools (send_file) sent while the update ran, as a JSON array, each with the call that
 * sent it and what that call answered. A run after a crash answers a call cut off by the crash
 * with what it did, instead of "interrupted", so the model does not send the file a second time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").addColumn("tool_files", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("inbox").dropColumn("tool_files").execute();
}
