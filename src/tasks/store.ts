import { type Kysely, sql } from "kysely";
import { z } from "zod";
import type { DatabaseKind } from "../db/connect.js";
import type { Database, TaskMode, TaskRow, TaskStatus } from "../db/schema.js";
import { nextOccurrence, type Recurrence } from "./schedule.js";

export type Task = {
  id: number;
  conversation: string;
  chatId: number;
  threadId: number | undefined;
  instruction: string;
  mode: TaskMode;
  /** The repetition as asked for ("weekdays"), for lists; undefined for a one-shot task. */
  repeatText: string | undefined;
  recurrence: Recurrence | undefined;
  timeZone: string;
  nextRunAt: number | undefined;
  status: TaskStatus;
  runs: number;
  /** The sender whose permission set it up; undefined for a group's task from before it was kept. */
  createdBy: number | undefined;
};

export type NewTask = Omit<Task, "id" | "status" | "runs" | "nextRunAt" | "createdBy"> & {
  nextRunAt: number;
  createdBy?: number;
};

/** How many runs one conversation may have queued in any hour (see docs/scheduled-tasks.md). */
export const DEFAULT_RUNS_PER_HOUR = 20;
const HOUR_MS = 3_600_000;
/** How long past its expiry a tool call still waiting holds its conversation's tasks. */
const EXPIRY_SWEEP_GRACE_MS = 60_000;

/** Names the advisory locks that serialise task creation per conversation on PostgreSQL. */
const TASKS_LOCK_CLASS = 0x6b6f7461;

/**
 * A queued run's inbox row has an update_id below every Telegram update_id (they are positive),
 * ordered by the run's id: among a chat's waiting work, due tasks go first, in the order they
 * were queued. Safe integers all: the base leaves 2^52 runs.
 */
export const SCHEDULED_UPDATE_BASE = -(2 ** 52);

/** What the inbox holds for a queued run (its row carries no Telegram update). */
export const scheduledRunSchema = z.object({
  update_id: z.number().int(),
  scheduled_task: z.object({
    task_id: z.number().int(),
    run_id: z.number().int(),
    due_at: z.number().int(),
  }),
});
export type ScheduledRun = z.infer<typeof scheduledRunSchema>;

/** The queued run an inbox item stands for, or undefined for a Telegram update. */
export function scheduledRunOf(update: unknown): ScheduledRun | undefined {
  const parsed = scheduledRunSchema.safeParse(update);
  return parsed.success ? parsed.data : undefined;
}

/** Named, not `*`: a statement the database parsed once fails when a later migration adds a column. */
const TASK_COLUMNS = [
  "id",
  "conversation",
  "chat_id",
  "thread_id",
  "instruction",
  "mode",
  "repeat_text",
  "cron",
  "interval_ms",
  "anchor_at",
  "time_zone",
  "next_run_at",
  "status",
  "status_reason",
  "runs",
  "created_at",
  "created_by",
] as const satisfies readonly (keyof TaskRow)[];

function recurrenceOf(row: TaskRow): Recurrence | undefined {
  if (row.cron !== null) return { kind: "cron", expression: row.cron };
  if (row.interval_ms !== null && row.anchor_at !== null) {
    return { kind: "interval", everyMs: row.interval_ms, anchorMs: row.anchor_at };
  }
  return undefined;
}

function toTask(row: TaskRow): Task {
  return {
    id: row.id,
    conversation: row.conversation,
    chatId: Number(row.chat_id),
    threadId: row.thread_id ?? undefined,
    instruction: row.instruction,
    mode: row.mode,
    repeatText: row.repeat_text ?? undefined,
    recurrence: recurrenceOf(row),
    timeZone: row.time_zone,
    nextRunAt: row.next_run_at ?? undefined,
    status: row.status,
    runs: row.runs,
    createdBy: row.created_by ?? undefined,
  };
}

export type TaskStore = ReturnType<typeof createTaskStore>;

/** Scheduled tasks in the database, and the queueing of their due runs into the inbox. */
export function createTaskStore(deps: {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** Stamps rows' creation times. */
  now?: () => number;
  /** Runs one conversation may have queued in any hour; the rest wait (DEFAULT_RUNS_PER_HOUR). */
  runsPerHour?: number;
  /** Told when a conversation reached its hourly runs and some of its due runs wait. */
  onRunsHeldBack?(conversation: string, waiting: number): void;
}) {
  const { db } = deps;
  const now = deps.now ?? Date.now;
  const stamp = () => new Date(now()).toISOString();
  const runsPerHour = deps.runsPerHour ?? DEFAULT_RUNS_PER_HOUR;

  /**
   * Adds a task, unless its conversation already has `maxActive` active ones: then the count is
   * returned instead. The count and the insert are one transaction that holds the conversation's
   * lock, so parallel calls (one model answer's, or replicas') cannot pass the limit together. On
   * SQLite the process's one connection runs transactions one at a time (and one process owns the
   * file); on PostgreSQL a transaction-scoped advisory lock on the conversation does it.
   */
  async function addWithin(
    task: NewTask,
    maxActive: number,
  ): Promise<{ added: Task } | { full: number }> {
    return db.transaction().execute(async (trx) => {
      if (deps.kind === "postgres") {
        await sql`select pg_advisory_xact_lock(${TASKS_LOCK_CLASS}, hashtext(${task.conversation}))`.execute(
          trx,
        );
      }
      const active = await countActive(task.conversation, trx);
      if (active >= maxActive) return { full: active };
      return { added: await insert(task, trx) };
    });
  }

  async function add(task: NewTask): Promise<Task> {
    return insert(task, db);
  }

  async function insert(task: NewTask, on: Kysely<Database>) {
    const { recurrence } = task;
    const row = await on
      .insertInto("tasks")
      .values({
        conversation: task.conversation,
        chat_id: String(task.chatId),
        thread_id: task.threadId ?? null,
        instruction: task.instruction,
        mode: task.mode,
        repeat_text: task.repeatText ?? null,
        cron: recurrence?.kind === "cron" ? recurrence.expression : null,
        interval_ms: recurrence?.kind === "interval" ? recurrence.everyMs : null,
        anchor_at: recurrence?.kind === "interval" ? recurrence.anchorMs : null,
        time_zone: task.timeZone,
        next_run_at: task.nextRunAt,
        status: "active",
        created_at: stamp(),
        created_by: task.createdBy ?? null,
      })
      .returning(TASK_COLUMNS)
      .executeTakeFirstOrThrow();
    return toTask(row);
  }

  async function countActive(conversation: string, on: Kysely<Database> = db): Promise<number> {
    const { count } = await on
      .selectFrom("tasks")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("conversation", "=", conversation)
      .where("status", "=", "active")
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  /** A conversation's active tasks, the next to run first. */
  async function listActive(conversation: string): Promise<Task[]> {
    const rows = await db
      .selectFrom("tasks")
      .select(TASK_COLUMNS)
      .where("conversation", "=", conversation)
      .where("status", "=", "active")
      .orderBy("next_run_at")
      .orderBy("id")
      .execute();
    return rows.map(toTask);
  }

  async function get(id: number): Promise<Task | undefined> {
    const row = await db
      .selectFrom("tasks")
      .select(TASK_COLUMNS)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toTask(row);
  }

  /** Ends active tasks of a conversation (all, or the one with `id`); returns those it ended. */
  async function end(
    conversation: string,
    status: "cancelled" | "disabled",
    reason: string | null,
    id?: number,
  ): Promise<Task[]> {
    const rows = await db
      .updateTable("tasks")
      .set({ status, status_reason: reason, next_run_at: null })
      .where("conversation", "=", conversation)
      .where((eb) =>
        eb.or([
          eb("status", "=", "active"),
          // A one-shot task is done once its run is queued; until that run first starts, it can
          // still be called off (the run then skips it). One put back after a start may have
          // sent part of its answer already.
          eb.and([
            eb("status", "=", "done"),
            eb.exists(
              eb
                .selectFrom("task_runs as run")
                .innerJoin("inbox", (join) =>
                  join.on(sql<boolean>`inbox.update_id = ${SCHEDULED_UPDATE_BASE} + run.id`),
                )
                .select("run.id")
                .whereRef("run.task_id", "=", "tasks.id")
                .where("inbox.status", "=", "pending")
                .where("inbox.attempts", "=", 0),
            ),
          ]),
        ]),
      )
      .$if(id !== undefined, (q) => q.where("id", "=", id as number))
      .returning(TASK_COLUMNS)
      .execute();
    return rows.map(toTask);
  }

  /** Cancels one of a conversation's active tasks; undefined when it has no such task. */
  async function cancel(conversation: string, id: number): Promise<Task | undefined> {
    return (await end(conversation, "cancelled", null, id))[0];
  }

  /** Disables every active task of a conversation (it was cleared); returns how many. */
  async function disableConversation(conversation: string, reason: string): Promise<number> {
    return (await end(conversation, "disabled", reason)).length;
  }

  /** A conversation's tasks follow it to its new key (a group that became a supergroup). */
  async function move(from: string, to: { conversation: string; chatId: number }): Promise<number> {
    const result = await db
      .updateTable("tasks")
      .set({ conversation: to.conversation, chat_id: String(to.chatId) })
      .where("conversation", "=", from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Disables one task (its chat blocked the bot), whatever its status was. */
  async function disable(id: number, reason: string): Promise<void> {
    await db
      .updateTable("tasks")
      .set({ status: "disabled", status_reason: reason, next_run_at: null })
      .where("id", "=", id)
      .execute();
  }

  /**
   * Queues the runs that are due: for each due task, in one transaction, a task_runs row (unique
   * per task and due time), the inbox row that runs it, and the task's next run, which is the
   * first occurrence after now, so that a service that was down queues one late run per task, not
   * one per missed occurrence. On PostgreSQL replicas queue at the same time: each locks the tasks
   * it queues and skips those another is queueing. A conversation queues at most `runsPerHour`
   * runs in any hour: its other due tasks stay due, and run late once the hour has room (replicas
   * queueing the same conversation at the same moment may pass the limit by a batch between them).
   * A conversation with a tool call waiting for the user's answer queues nothing until it is
   * answered or expires. Returns the conversation of each run it queued.
   */
  async function queueDue(at: number, limit = 100): Promise<string[]> {
    const since = new Date(at - HOUR_MS).toISOString();
    const heldBack = new Map<string, number>();
    const queued = await db.transaction().execute(async (trx) => {
      const recentRuns = trx
        .selectFrom("task_runs")
        .innerJoin("tasks as owner", "owner.id", "task_runs.task_id")
        .where("task_runs.queued_at", ">=", since)
        .groupBy("owner.conversation");
      const due = await trx
        .selectFrom("tasks")
        .select(TASK_COLUMNS)
        .where("status", "=", "active")
        .where("next_run_at", "<=", at)
        // A conversation whose hour is full is not looked at: its waiting tasks, however many,
        // must not crowd other conversations' out of the batch.
        .where(
          "conversation",
          "not in",
          recentRuns
            .select("owner.conversation")
            .having((eb) => eb.fn.countAll(), ">=", runsPerHour),
        )
        // A conversation where a tool call waits for the user's answer keeps its tasks due until
        // that is answered or expires: a run now would set the waiting calls aside unanswered.
        // Past its expiry a request waits for the sweep that ends it (and queues the turn that
        // goes on), within seconds; the grace only bounds the wait should no sweep come.
        .where(
          "conversation",
          "not in",
          trx
            .selectFrom("tool_approvals")
            .select("tool_approvals.conversation")
            .where("tool_approvals.status", "=", "pending")
            .where("tool_approvals.expires_at", ">", at - EXPIRY_SWEEP_GRACE_MS),
        )
        .orderBy("next_run_at")
        .limit(limit)
        .$if(deps.kind === "postgres", (q) => q.forUpdate().skipLocked())
        .execute();
      const conversations = [...new Set(due.map((row) => row.conversation))];
      const used = new Map<string, number>();
      if (conversations.length > 0) {
        const counts = await recentRuns
          .select((eb) => ["owner.conversation", eb.fn.countAll<number>().as("runs")])
          .where("owner.conversation", "in", conversations)
          .execute();
        for (const row of counts) used.set(row.conversation, Number(row.runs));
      }
      const queuedFor: string[] = [];
      for (const row of due) {
        const runs = used.get(row.conversation) ?? 0;
        if (runs >= runsPerHour) {
          heldBack.set(row.conversation, (heldBack.get(row.conversation) ?? 0) + 1);
          continue;
        }
        const dueAt = row.next_run_at as number;
        const run = await trx
          .insertInto("task_runs")
          .values({ task_id: row.id, due_at: dueAt, queued_at: new Date(at).toISOString() })
          .onConflict((oc) => oc.columns(["task_id", "due_at"]).doNothing())
          .returning("id")
          .executeTakeFirst();
        if (run) {
          const updateId = SCHEDULED_UPDATE_BASE + run.id;
          const update: ScheduledRun = {
            update_id: updateId,
            scheduled_task: { task_id: row.id, run_id: run.id, due_at: dueAt },
          };
          await trx
            .insertInto("inbox")
            .values({
              update_id: updateId,
              // The inbox runs one conversation's work in order: the run waits for its messages.
              chat_id: row.conversation,
              update_json: JSON.stringify(update),
              status: "pending",
              received_at: new Date(at).toISOString(),
            })
            .execute();
          used.set(row.conversation, runs + 1);
          queuedFor.push(row.conversation);
        }
        const recurrence = recurrenceOf(row);
        const next = recurrence && nextOccurrence(recurrence, Math.max(at, dueAt), row.time_zone);
        await trx
          .updateTable("tasks")
          .set({
            next_run_at: next ?? null,
            status: next === undefined ? "done" : "active",
            runs: row.runs + (run ? 1 : 0),
          })
          .where("id", "=", row.id)
          .where("next_run_at", "=", dueAt)
          .execute();
      }
      return queuedFor;
    });
    for (const [conversation, waiting] of heldBack) deps.onRunsHeldBack?.(conversation, waiting);
    return queued;
  }

  /**
   * Disables the active tasks whose creator is not in `allowed` (they left ALLOWED_USER_IDS);
   * returns them. Tasks without a recorded creator are left alone.
   */
  async function disableNotAllowed(allowed: readonly number[], reason: string): Promise<Task[]> {
    const rows = await db
      .updateTable("tasks")
      .set({ status: "disabled", status_reason: reason, next_run_at: null })
      .where("status", "=", "active")
      .where("created_by", "is not", null)
      .$if(allowed.length > 0, (q) => q.where("created_by", "not in", allowed))
      .returning(TASK_COLUMNS)
      .execute();
    return rows.map(toTask);
  }

  return {
    add,
    addWithin,
    countActive: (conversation: string) => countActive(conversation),
    disableNotAllowed,
    listActive,
    get,
    cancel,
    disableConversation,
    disable,
    move,
    queueDue,
  };
}
