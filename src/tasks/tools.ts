import { z } from "zod";
import { parseConversationKey } from "../scope/conversation-key.js";
import { defineTool, type Tool } from "../tools/registry.js";
import {
  describeRecurrence,
  firstOccurrence,
  formatInZone,
  HORIZON_YEARS,
  horizonMs,
  isoInZone,
  nextOccurrence,
  parseRepeat,
  parseWhen,
  REPEAT_FORMS,
  type Recurrence,
  ScheduleError,
  shortestGapMs,
  tooFarText,
  WHEN_FORMS,
  type When,
} from "./schedule.js";
import type { Task, TaskStore } from "./store.js";

/** What a conversation may schedule; over a limit, schedule_task answers an error to relay. */
export type TaskLimits = {
  /** Active tasks per conversation. */
  maxTasks: number;
  /**
   * Shortest time between two runs of a recurring task, and the soonest a task set up during a
   * scheduled run may be due (a run that schedules itself "now" would otherwise run for ever).
   */
  minIntervalMs: number;
  /** Longest instruction, in characters. */
  maxInstructionChars: number;
};

export const DEFAULT_TASK_LIMITS: TaskLimits = {
  maxTasks: 20,
  minIntervalMs: 15 * 60_000,
  maxInstructionChars: 2_000,
};

/** A `when` this little in the past ("now", a slow turn) still runs, at once. */
const PAST_GRACE_MS = 60_000;

function fail(message: string): never {
  throw new ScheduleError(message);
}

export function createTaskTools(deps: {
  tasks: TaskStore;
  timeZone: string;
  now: () => number;
  limits?: TaskLimits;
  /** Told of each task added, with its first run (ms), so that the scheduler is not a tick late. */
  onAdded(chatId: string, firstRunAt: number): void;
}): Tool[] {
  const { tasks, timeZone } = deps;
  const limits = deps.limits ?? DEFAULT_TASK_LIMITS;
  const minMinutes = limits.minIntervalMs / 60_000;

  const when = (ms: number) => ({
    next_run: isoInZone(ms, timeZone),
    next_run_local: formatInZone(ms, timeZone),
  });
  const view = (task: Task) => ({
    id: task.id,
    instruction: task.instruction,
    mode: task.mode,
    repeat: task.recurrence
      ? `${task.repeatText} (${describeRecurrence(task.recurrence)})`
      : "once",
    ...(task.nextRunAt === undefined ? {} : when(task.nextRunAt)),
  });

  /** The first run, checked against the limits; throws errors the model can relay. */
  function plan(whenText: string, repeatText: string | undefined, scheduledRun: boolean) {
    const at = deps.now();
    const when = parseWhen(whenText, at, timeZone);
    if (when.ms > horizonMs(at, timeZone)) fail(tooFarText(whenText));
    const { firstMs, recurrence } = firstRun(at, when, repeatText);
    const soonest = at + limits.minIntervalMs;
    if (scheduledRun && firstMs < soonest) {
      fail(
        `A task set up during a scheduled run cannot be due within ${minMinutes} minutes (before ${formatInZone(soonest, timeZone)}): choose a later time, or do it now, in this run.`,
      );
    }
    return { firstMs, recurrence };
  }

  function firstRun(
    at: number,
    when: When,
    repeatText: string | undefined,
  ): { firstMs: number; recurrence: Recurrence | undefined } {
    const whenMs = when.ms;
    if (repeatText === undefined) {
      if (whenMs < at - PAST_GRACE_MS) {
        fail(
          `${formatInZone(whenMs, timeZone)} has passed (it is now ${formatInZone(at, timeZone)}): give a time in the future.`,
        );
      }
      return { firstMs: Math.max(whenMs, at), recurrence: undefined };
    }
    const recurrence: Recurrence = parseRepeat(repeatText, whenMs, timeZone, when.wall);
    // Recurrences run on the minute: "in 1 hour" (13:10:42) starts with the 13:10 run it names,
    // and "now" (13:10:42) with today's 13:10, not tomorrow's.
    const minuteOf = (ms: number) => ms - (ms % 60_000);
    const fromMs = recurrence.kind === "cron" ? minuteOf(whenMs) : whenMs;
    const nowMs = recurrence.kind === "cron" ? minuteOf(at) : at;
    const firstMs = firstOccurrence(recurrence, Math.max(fromMs, nowMs), timeZone);
    if (firstMs === undefined) fail(`"${repeatText}" never comes: no date matches it.`);
    if (shortestGapMs(recurrence, firstMs, timeZone) < limits.minIntervalMs) {
      fail(
        `"${repeatText}" would run more often than every ${minMinutes} minutes, the shortest interval allowed for a recurring task: choose a longer one.`,
      );
    }
    const following = nextOccurrence(recurrence, firstMs, timeZone);
    if (
      firstMs > horizonMs(at, timeZone) ||
      (following !== undefined && following > horizonMs(firstMs, timeZone))
    ) {
      fail(tooFarText(repeatText));
    }
    return { firstMs, recurrence };
  }

  const scheduleTask = defineTool({
    name: "schedule_task",
    description: [
      "Schedules something to happen later in this conversation: a reminder, or a task you run then (a recurring check, a summary).",
      `Times are in ${timeZone}. \`when\` is the first run: ${WHEN_FORMS}.`,
      `\`repeat\` (optional) makes it recurring: ${REPEAT_FORMS}. Recurring tasks run at most every ${minMinutes} minutes; a task is due at most ${HORIZON_YEARS} years ahead.`,
      "`mode`: 'remind' sends `instruction` to the user word for word at that time, with no model call: write it as the reminder itself (\"Call the bank\"). 'run' (the default) gives `instruction` to you as a turn at that time, with your tools, and your answer is sent: use it when the task needs thinking or tools (\"Summarise notes.txt\").",
      `At most ${limits.maxTasks} active tasks per conversation. The answer gives the exact next run: confirm it to the user.`,
    ].join(" "),
    schema: z.object({
      when: z.string().min(1).describe("When to run first (see the accepted forms)."),
      instruction: z
        .string()
        .trim()
        .min(1)
        .max(limits.maxInstructionChars)
        .describe("The reminder's text ('remind'), or what to do ('run')."),
      repeat: z.string().min(1).optional().describe("How it repeats; omit for a one-time task."),
      mode: z.enum(["remind", "run"]).default("run"),
    }),
    async run(args, ctx) {
      const target = parseConversationKey(ctx.chatId);
      if (!target) fail("Scheduled tasks run only in the Telegram bot, not in this chat.");
      const { firstMs, recurrence } = plan(args.when, args.repeat, ctx.origin === "scheduled_task");
      const outcome = await tasks.addWithin(
        {
          conversation: ctx.chatId,
          ...target,
          instruction: args.instruction,
          mode: args.mode,
          repeatText: args.repeat,
          recurrence,
          timeZone,
          nextRunAt: firstMs,
          createdBy: ctx.askedBy,
        },
        limits.maxTasks,
      );
      if ("full" in outcome) {
        fail(
          `This conversation already has ${outcome.full} scheduled tasks, the most allowed: cancel one (list_tasks, cancel_task, or /tasks) first.`,
        );
      }
      const task = outcome.added;
      deps.onAdded(ctx.chatId, firstMs);
      const following = recurrence && nextOccurrence(recurrence, firstMs, timeZone);
      return {
        scheduled: view(task),
        ...(following === undefined ? {} : { run_after_that: formatInZone(following, timeZone) }),
      };
    },
  });

  const listTasks = defineTool({
    name: "list_tasks",
    description: `Lists this conversation's scheduled tasks that are still to run, the next first, with their ids and next run (${timeZone}).`,
    schema: z.object({}),
    async run(_args, ctx) {
      return { tasks: (await tasks.listActive(ctx.chatId)).map(view) };
    },
  });

  const cancelTask = defineTool({
    name: "cancel_task",
    description: "Cancels one of this conversation's scheduled tasks, by the id list_tasks gives.",
    schema: z.object({ id: z.number().int().positive() }),
    async run(args, ctx) {
      const task = await tasks.cancel(ctx.chatId, args.id);
      if (!task) fail(`This conversation has no scheduled task ${args.id}: list_tasks shows them.`);
      return { cancelled: { id: task.id, instruction: task.instruction } };
    },
  });

  return [scheduleTask, listTasks, cancelTask];
}
