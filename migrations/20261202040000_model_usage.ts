import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * The tokens of every Gemini call, by conversation and model, for /usage and its cost estimate.
 * A table of its own rather than columns of `messages`: /clear wipes a conversation's events, and
 * what was spent must not go with them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("model_usage")
    .addColumn("chat_id", "text", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("prompt_tokens", "integer", (c) => c.notNull())
    .addColumn("cached_tokens", "integer", (c) => c.notNull())
    .addColumn("output_tokens", "integer", (c) => c.notNull())
    .addColumn("thoughts_tokens", "integer", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  // /usage sums one conversation's calls since the start of a day or a month.
  await db.schema
    .createIndex("model_usage_chat_created")
    .on("model_usage")
    .columns(["chat_id", "created_at"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("model_usage").execute();
}
