import { type Kysely, PostgresAdapter, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Scheduled tasks, and the runs they queued. A run becomes an inbox row of its own (see
 * src/tasks/store.ts, whose update_id derives from the run's id); `task_runs` holds one row per
 * (task, due time), so that a run can never be queued twice, whatever replicas race for it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = (table: string) =>
    db.schema
      .createTable(table)
      .addColumn("id", pg ? "bigserial" : "integer", (c) =>
        pg ? c.primaryKey() : c.primaryKey().autoIncrement(),
      );
  await id("tasks")
    .addColumn("conversation", "text", (c) => c.notNull())
    .addColumn("chat_id", "text", (c) => c.notNull())
    .addColumn("thread_id", "bigint")
    .addColumn("instruction", "text", (c) => c.notNull())
    .addColumn("mode", "text", (c) => c.notNull())
    .addColumn("repeat_text", "text")
    .addColumn("cron", "text")
    .addColumn("interval_ms", "bigint")
    .addColumn("anchor_at", "bigint")
    .addColumn("time_zone", "text", (c) => c.notNull())
    .addColumn("next_run_at", "bigint")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("status_reason", "text")
    .addColumn("runs", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  // The scheduler looks for active tasks that are due; finished ones are never looked at again.
  await db.schema
    .createIndex("tasks_due")
    .on("tasks")
    .column("next_run_at")
    .where(sql.ref("status"), "=", "active")
    .execute();
  await db.schema
    .createIndex("tasks_conversation")
    .on("tasks")
    .columns(["conversation", "id"])
    .execute();

  await id("task_runs")
    .addColumn("task_id", "bigint", (c) => c.notNull())
    .addColumn("due_at", "bigint", (c) => c.notNull())
    .addColumn("queued_at", "text", (c) => c.notNull())
    .addUniqueConstraint("task_runs_once", ["task_id", "due_at"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("task_runs").execute();
  await db.schema.dropTable("tasks").execute();
}
