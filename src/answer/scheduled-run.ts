import { GrammyError } from "grammy";
import type { Logger } from "../logger.js";
import type { InboxItem, Lease } from "../queue/inbox.js";
import { escapeHtml } from "../render/markdown-html.js";
import { dueText } from "../tasks/schedule.js";
import type { ScheduledRun, Task, TaskStore } from "../tasks/store.js";
import { type TurnAnswererDeps, turnAnswerer } from "./answer-turn.js";
import { geminiFailureText } from "./gemini-failure.js";

/** A run that starts this long after its due time says so: the service was down or busy. */
export const LATE_AFTER_MS = 2 * 60_000;

/**
 * Telegram's refusals (400) that stay until someone in the chat changes something: the chat or
 * topic gone or closed, the bot's right to write text taken. A group become a supergroup is not
 * one: the run is tried again, and finds the task moved to the new chat by then.
 */
const NO_PLACE_TO_WRITE =
  /chat not found|thread not found|TOPIC_CLOSED|TOPIC_DELETED|not enough rights to send text messages|have no rights to send a message|CHAT_WRITE_FORBIDDEN/i;

/**
 * Telegram's answers that mean the bot cannot speak in the chat any more (blocked, kicked, the
 * chat or topic gone, its rights taken): retrying would fail the same way at every occurrence.
 */
function chatGone(error: unknown): boolean {
  if (!(error instanceof GrammyError)) return false;
  return (
    error.error_code === 403 ||
    (error.error_code === 400 && NO_PLACE_TO_WRITE.test(error.description))
  );
}

/** What the model (and the history) gets: the instruction, marked as the scheduled task it is. */
export function taskPrompt(task: Task, due: string, late: boolean): string {
  const repeat = task.repeatText ? `, repeating ${task.repeatText}` : "";
  const when = late ? `due at ${due}, running late` : `due at ${due}`;
  const kind = task.mode === "remind" ? "reminder" : "task";
  return `[Scheduled ${kind} #${task.id}${repeat}, ${when}. Nobody typed this now: it was set up earlier in this conversation; do it and answer the user.]\n${task.instruction}`;
}

/** A plain reminder, sent without a model call. */
export function reminderText(task: Task, due: string, late: boolean): string {
  return `⏰ ${task.instruction}${late ? `\n\n_(this was due at ${due})_` : ""}`;
}

/** Why a task whose creator left ALLOWED_USER_IDS was disabled (tasks.status_reason). */
export const NOT_ALLOWED_REASON = "whoever set it up is no longer in ALLOWED_USER_IDS";

export function logTaskNotAllowed(logger: Logger, task: Task): void {
  logger.warn(
    { task_id: task.id, chat_id: task.conversation, created_by: task.createdBy },
    "disabled a scheduled task: whoever set it up is no longer in ALLOWED_USER_IDS",
  );
}

export type ScheduledRunner = ReturnType<typeof createScheduledRunner>;

/**
 * Runs a scheduled task's queued run as a turn of its conversation and delivers the answer in
 * its chat and topic. It holds the run's inbox lease like any update: the turn is stored under
 * the run's update_id, so a run taken over after a crash delivers the stored answer (the parts
 * not yet sent) instead of asking the model again. Its answer is spoken where the conversation's
 * /voice (or VOICE_REPLIES) is on; `auto` leaves it text, as nobody spoke to Koroku.
 */
export function createScheduledRunner(
  deps: TurnAnswererDeps & {
    /** A task whose creator is not among them is disabled instead of run. */
    allowedUserIds: readonly number[];
    tasks: Pick<TaskStore, "get" | "disable">;
    now?: () => number;
  },
) {
  const now = deps.now ?? Date.now;
  const allowed = new Set(deps.allowedUserIds);
  const answerTurn = turnAnswerer(deps);

  async function run(item: InboxItem, lease: Lease, scheduled: ScheduledRun): Promise<void> {
    const { task_id: taskId, due_at: dueAt } = scheduled.scheduled_task;
    const log = deps.logger.child({ task_id: taskId, update_id: item.updateId });
    const task = await deps.tasks.get(taskId);
    if (!task || task.status === "cancelled" || task.status === "disabled") {
      log.info({ status: task?.status ?? "deleted" }, "scheduled run skipped: its task ended");
      return;
    }
    if (task.createdBy !== undefined && !allowed.has(task.createdBy)) {
      await deps.tasks.disable(task.id, NOT_ALLOWED_REASON);
      logTaskNotAllowed(log, task);
      return;
    }
    const at = now();
    const late = at - dueAt > LATE_AFTER_MS;
    const due = dueText(dueAt, at, task.timeZone);
    const result = await answerTurn({
      lease,
      updateId: item.updateId,
      conversation: task.conversation,
      chatId: task.chatId,
      threadId: task.threadId,
      // Private chats are the ones with positive ids.
      privateChat: task.chatId > 0,
      // A run's update id is negative; a draft's must be positive, and the same for every attempt.
      draftId: -item.updateId,
      askedBy: task.createdBy,
      input: {
        text: taskPrompt(task, due, late),
        origin: "scheduled_task",
        answer: task.mode === "remind" ? reminderText(task, due, late) : undefined,
      },
      logger: log,
      failure: {
        log: "scheduled task failed: Gemini",
        text: (error) => `Scheduled task #${task.id} could not run: ${geminiFailureText(error)}`,
      },
      async handled(error) {
        if (!chatGone(error)) return false;
        await deps.tasks.disable(task.id, `Telegram: ${(error as GrammyError).description}`);
        log.warn(
          { err: error, chat_id: task.chatId },
          "disabled a scheduled task: its chat no longer accepts the bot's messages",
        );
        return true;
      },
    });
    if (result && late) {
      log.info({ due_at: new Date(dueAt).toISOString() }, "ran a scheduled task late");
    }
  }

  /** Tells the chat that the inbox gave up on a run (it kept failing). */
  async function tellGaveUp(scheduled: ScheduledRun): Promise<void> {
    const task = await deps.tasks.get(scheduled.scheduled_task.task_id);
    if (!task) return;
    await deps.delivery.sendHtml(
      task.chatId,
      escapeHtml(
        `Sorry, scheduled task #${task.id} could not run: something kept failing on my side.`,
      ),
      task.threadId,
    );
  }

  return { run, tellGaveUp };
}
