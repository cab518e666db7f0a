import { Composer, InlineKeyboard } from "grammy";
import type { Delivery } from "../../answer/delivery.js";
import { escapeHtml } from "../../render/markdown-html.js";
import { truncate } from "../../session/event-text.js";
import { describeRecurrence, formatInZone } from "../../tasks/schedule.js";
import type { Task, TaskStore } from "../../tasks/store.js";
import type { TurnContext } from "../turn-context.js";
import { sendListing } from "./listing.js";

const CANCEL_DATA = /^tasks:cancel:(\d+)$/;
const MAX_INSTRUCTION_CHARS = 120;

function taskLineHtml(task: Task): string {
  const icon = task.mode === "remind" ? "⏰" : "🤖";
  const repeat = task.recurrence
    ? `${task.repeatText} (${describeRecurrence(task.recurrence)})`
    : "once";
  const next = task.nextRunAt === undefined ? "—" : formatInZone(task.nextRunAt, task.timeZone);
  return `${icon} <b>#${task.id}</b> ${escapeHtml(truncate(task.instruction, MAX_INSTRUCTION_CHARS))}\n    next: ${escapeHtml(next)} · ${escapeHtml(repeat)}`;
}

const cancelledHtml = (task: Task) =>
  `🗑 Cancelled task #${task.id}: ${escapeHtml(truncate(task.instruction, MAX_INSTRUCTION_CHARS))}`;
const noSuchTaskHtml = (id: number) =>
  `This conversation has no scheduled task #${id} (it may have run or been cancelled already). /tasks lists them.`;

export type TasksCommandDeps = {
  tasks: Pick<TaskStore, "listActive" | "cancel">;
  delivery: Delivery;
};

/**
 * /tasks lists the conversation's scheduled tasks, each with a button that cancels it;
 * `/tasks cancel <id>` does the same in words. Answered from the database, without a model call.
 */
export function tasksComposer(deps: TasksCommandDeps): Composer<TurnContext> {
  const { tasks, delivery } = deps;
  const composer = new Composer<TurnContext>();

  composer.command("tasks", async (ctx) => {
    const { conversation, thread: threadId } = ctx;
    const arg = ctx.match.trim();
    if (arg !== "") {
      const id = Number(/^cancel\s+#?(\d+)$/i.exec(arg)?.[1]);
      if (!Number.isSafeInteger(id)) {
        await delivery.sendHtml(
          ctx.chat.id,
          "Usage: /tasks, or /tasks cancel &lt;id&gt;.",
          threadId,
        );
        return;
      }
      await ctx.lease.ensureHeld();
      const task = await tasks.cancel(conversation, id);
      await delivery.sendHtml(
        ctx.chat.id,
        task ? cancelledHtml(task) : noSuchTaskHtml(id),
        threadId,
      );
      return;
    }
    const list = await tasks.listActive(conversation);
    if (list.length === 0) {
      await delivery.sendHtml(
        ctx.chat.id,
        "No scheduled tasks in this conversation. Ask me to remind you of something, or to do something later or regularly.",
        threadId,
      );
      return;
    }
    const keyboard = InlineKeyboard.from(
      list.map((task) => [InlineKeyboard.text(`Cancel #${task.id}`, `tasks:cancel:${task.id}`)]),
    );
    await ctx.lease.ensureHeld();
    await sendListing(
      ctx.api,
      { chatId: ctx.chat.id, threadId },
      [`<b>Scheduled tasks</b> (${list.length})`, ...list.map(taskLineHtml)].join("\n"),
      keyboard,
    );
  });

  composer.callbackQuery(CANCEL_DATA, async (ctx) => {
    const id = Number(ctx.match[1]);
    const message = ctx.callbackQuery.message;
    if (!message) return;
    await ctx.lease.ensureHeld();
    const task = await tasks.cancel(ctx.conversation, id);
    await ctx.answerCallbackQuery({
      text: task ? `Cancelled task #${id}` : `Task #${id} is no longer scheduled`,
    });
    if (task) {
      await delivery.sendHtml(message.chat.id, cancelledHtml(task), ctx.thread);
    }
  });

  return composer;
}
