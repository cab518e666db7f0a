import { type Kysely, PostgresAdapter } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * The bytes of every file a user sent or the model produced, content-addressed: the same bytes
 * are stored once however many chats hold them. `attachment_uses` says which conversation holds
 * which bytes under which name, so that /clear can remove what no other conversation uses.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable("attachments")
    .addColumn("sha256", "text", (c) => c.primaryKey())
    .addColumn("mime_type", "text", (c) => c.notNull())
    .addColumn("size", pg ? "bigint" : "integer", (c) => c.notNull())
    .addColumn("data", pg ? "bytea" : "blob", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("attachment_uses")
    .addColumn("chat_id", "text", (c) => c.notNull())
    .addColumn("sha256", "text", (c) => c.notNull())
    .addColumn("file_name", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("attachment_uses_pk", ["chat_id", "sha256"])
    .execute();
  // /clear asks, for each of a chat's attachments, whether another chat still uses it.
  await db.schema
    .createIndex("attachment_uses_sha256")
    .on("attachment_uses")
    .column("sha256")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("attachment_uses").execute();
  await db.schema.dropTable("attachments").execute();
}
