import type { Kysely } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * `messages.scope`: the recall scope (DESIGN.md, "Recall scopes") each event belongs to, so that
 * search_history looks through a whole scope with one indexed comparison. The names are those of
 * src/scope/recall-scope.ts's scopeName: `private-<user id>` for a private chat and its topics,
 * `group<chat id>` for a group and its topics, `terminal` for any key without a Telegram chat id.
 * The rule is written out here, not imported, because a migration must not change with the code.
 */
function scopeOfStoredKey(key: string): string {
  const match = /^(-?\d+)(?::\d+)?$/.exec(key);
  if (!match) return "terminal";
  const chatId = Number(match[1]);
  return chatId > 0 ? `private-${chatId}` : `group${chatId}`;
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("messages")
    .addColumn("scope", "text", (c) => c.notNull().defaultTo(""))
    .execute();
  const keys = await db.selectFrom("messages").select("chat_id").distinct().execute();
  for (const { chat_id: key } of keys as Array<{ chat_id: string }>) {
    await db
      .updateTable("messages")
      .set({ scope: scopeOfStoredKey(key) })
      .where("chat_id", "=", key)
      .execute();
  }
  await db.schema
    .createIndex("messages_scope_id")
    .on("messages")
    .columns(["scope", "id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("messages_scope_id").execute();
  await db.schema.alterTable("messages").dropColumn("scope").execute();
}
