import { type Kysely, PostgresAdapter } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * The profile of each recall scope and forgetting (src/recall/):
 * - `profile_entries`: the durable facts the model keeps with remember/forget, per scope.
 * - `forget_requests`: what a `/forget <words>` asked to hide, until its button confirms it.
 * - `messages.forgotten_at`: set on the events a confirmed /forget hid. The rows stay, so history
 *   and signatures stay valid; recall skips them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = (table: string) =>
    db.schema
      .createTable(table)
      .addColumn("id", pg ? "bigserial" : "integer", (c) =>
        pg ? c.primaryKey() : c.primaryKey().autoIncrement(),
      );
  await id("profile_entries")
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("fact", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("profile_entries_scope")
    .on("profile_entries")
    .columns(["scope", "id"])
    .execute();
  await id("forget_requests")
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("words", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("done_at", "text")
    .execute();
  await db.schema.alterTable("messages").addColumn("forgotten_at", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("messages").dropColumn("forgotten_at").execute();
  await db.schema.dropTable("forget_requests").execute();
  await db.schema.dropTable("profile_entries").execute();
}
