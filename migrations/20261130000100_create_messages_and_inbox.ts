import { type Kysely, PostgresAdapter, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.
// One file serves SQLite and PostgreSQL; they differ only in how integer keys are spelled.

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await db.schema
    .createTable("messages")
    // AUTOINCREMENT: ids are never reused, even after /clear deletes the newest rows; the context
    // cache relies on that to notice a chat cleared by another process.
    .addColumn("id", pg ? "bigserial" : "integer", (c) =>
      pg ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn("chat_id", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("role", "text")
    .addColumn("event_json", "text", (c) => c.notNull())
    .addColumn("is_user_message", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("tool_calls", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("prompt_tokens", "integer")
    .addColumn("estimated_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("search_text", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("update_id", "bigint")
    .addColumn("covers_from_id", "bigint")
    .addColumn("covers_to_id", "bigint")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  // Context loads read one chat's events after an id; /status and the guardrail walk it backwards.
  await db.schema
    .createIndex("messages_chat_id_id")
    .on("messages")
    .columns(["chat_id", "id"])
    .execute();
  // The latest compaction of a chat, and where its turns start, are single index probes. Partial
  // indexes: most rows are neither, and every index a row enters costs each append time.
  await db.schema
    .createIndex("messages_chat_compactions")
    .on("messages")
    .columns(["chat_id", "id"])
    .where(sql.ref("kind"), "=", "compaction")
    .execute();
  await db.schema
    .createIndex("messages_chat_user_messages")
    .on("messages")
    .columns(["chat_id", "id"])
    .where(sql.ref("is_user_message"), "=", 1)
    .execute();

  await db.schema
    .createTable("inbox")
    // In SQLite "integer" makes the key the rowid itself instead of a second index.
    .addColumn("update_id", pg ? "bigint" : "integer", (c) => c.primaryKey())
    .addColumn("chat_id", "text")
    .addColumn("update_json", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("lease_until", "bigint")
    .addColumn("claimed_by", "text")
    .addColumn("error", "text")
    .addColumn("received_at", "text", (c) => c.notNull())
    .addColumn("finished_at", "text")
    .execute();
  // Workers look for the oldest unfinished update, and of each chat. Finished rows pile up and are
  // never looked at again, so only unfinished ones are indexed; the queries repeat this predicate.
  await db.schema
    .createIndex("inbox_unfinished")
    .on("inbox")
    .column("update_id")
    .where(sql<boolean>`status in ('pending', 'running')`)
    .execute();
  await db.schema
    .createIndex("inbox_unfinished_chat")
    .on("inbox")
    .columns(["chat_id", "update_id"])
    .where(sql<boolean>`status in ('pending', 'running')`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("inbox").execute();
  await db.schema.dropTable("messages").execute();
}
