import { type Kysely, PostgresAdapter, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Tool calls that wait for the user's yes (src/approvals/): one row per call of a model event
 * (`event_id`, `call_index`), so that asking twice is impossible whatever replicas race; and the
 * "always allow" grants, one per recall scope and tool.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = (table: string) =>
    db.schema
      .createTable(table)
      .addColumn("id", pg ? "bigserial" : "integer", (c) =>
        pg ? c.primaryKey() : c.primaryKey().autoIncrement(),
      );
  await id("tool_approvals")
    .addColumn("conversation", "text", (c) => c.notNull())
    .addColumn("chat_id", "text", (c) => c.notNull())
    .addColumn("thread_id", "bigint")
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("event_id", "bigint", (c) => c.notNull())
    .addColumn("call_index", "integer", (c) => c.notNull())
    .addColumn("tool", "text", (c) => c.notNull())
    .addColumn("args_json", "text", (c) => c.notNull())
    .addColumn("asked_by", "bigint")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("message_id", "bigint")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("decided_at", "text")
    .addColumn("decided_by", "bigint")
    .addColumn("started", "integer", (c) => c.notNull().defaultTo(0))
    .addUniqueConstraint("tool_approvals_once", ["conversation", "event_id", "call_index"])
    .execute();
  // The expiry sweep looks only at requests still waiting.
  await db.schema
    .createIndex("tool_approvals_waiting")
    .on("tool_approvals")
    .column("expires_at")
    .where(sql.ref("status"), "=", "pending")
    .execute();
  await id("tool_grants")
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("tool", "text", (c) => c.notNull())
    .addColumn("granted_by", "bigint")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addUniqueConstraint("tool_grants_once", ["scope", "tool"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("tool_grants").execute();
  await db.schema.dropTable("tool_approvals").execute();
}
