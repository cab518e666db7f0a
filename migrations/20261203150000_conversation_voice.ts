import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * `/voice on|off|auto` of one conversation (a chat, or a topic of it), by its key; a conversation
 * without a row follows VOICE_REPLIES. `/clear` leaves it: it is a setting, not the conversation.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("conversation_voice")
    .addColumn("chat_id", "text", (c) => c.primaryKey())
    .addColumn("mode", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("conversation_voice").execute();
}
