import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Where Gemini's Files API holds an attachment's bytes, by the attachment's SHA-256: its file
 * name and uri, and when Gemini deletes it (48 hours after the upload). Shared by replicas, so a
 * file is uploaded once for all of them. A file Gemini could not process keeps its reason in
 * `failure` (and no uri): it is described in words rather than uploaded again each turn.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("gemini_files")
    .addColumn("sha256", "text", (c) => c.primaryKey())
    .addColumn("name", "text")
    .addColumn("uri", "text")
    .addColumn("mime_type", "text", (c) => c.notNull())
    .addColumn("expires_at", "text", (c) => c.notNull())
    .addColumn("failure", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("gemini_files").execute();
}
