import { type Kysely, sql } from "kysely";

// Frozen: this file must keep producing the same schema forever; change the schema in a new migration.

/**
 * Bounds on scheduled tasks (src/tasks/store.ts):
 * - `tasks.created_by`: the sender (user, or group or channel for an anonymous post) whose
 *   permission set the task up; a task whose creator left ALLOWED_USER_IDS is disabled. A private
 *   chat's id is its user's, so its tasks get their creator now; a group's older tasks keep none.
 * - `task_runs.queued_at` indexed: the scheduler counts each conversation's runs of the last hour.
 * - Active tasks without a next run (a time too far ahead was once taken and read as none) counted
 *   toward the limit for ever and would never run: they are disabled.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("tasks").addColumn("created_by", "bigint").execute();
  await db
    .updateTable("tasks")
    .set({ created_by: sql`cast(chat_id as bigint)` })
    .where("chat_id", "not like", "-%")
    .execute();
  await db
    .updateTable("tasks")
    .set({ status: "disabled", status_reason: "no next run: its time was too far ahead" })
    .where("status", "=", "active")
    .where("next_run_at", "is", null)
    .execute();
  await db.schema.createIndex("task_runs_queued").on("task_runs").column("queued_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("task_runs_queued").execute();
  await db.schema.alterTable("tasks").dropColumn("created_by").execute();
}
