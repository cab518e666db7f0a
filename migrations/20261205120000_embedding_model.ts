import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * `embedding_progress.model`: the embedding model the stored vectors were made with (on the
 * `cursor` row), so that a start finds a change of GEMINI_EMBEDDING_MODEL by one row's read.
 * Null until a start has checked the vectors.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("embedding_progress").addColumn("model", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("embedding_progress").dropColumn("model").execute();
}
