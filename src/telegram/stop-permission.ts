import type { Api } from "grammy";
import type { Chat, Message } from "grammy/types";
import { scheduledRunOf, type TaskStore } from "../tasks/store.js";
import { type Sender, senderOf } from "./access.js";

/**
 * Whether `stopper` may stop an answer asked for by `askedBy` in `chat`: anyone in a private chat
 * (it has one user, whose answers they all are), else the one who asked, or an administrator of
 * the group. An anonymous administrator posts as the group itself, so is one; a post as a channel
 * is no administrator. An answer whose asker is unknown (a group's task from before creators
 * were recorded) only an administrator stops. Throws when Telegram cannot tell who is one.
 */
export type MayStop = (
  chat: Pick<Chat, "id" | "type">,
  stopper: Sender,
  askedBy: number | undefined,
) => Promise<boolean>;

export function createStopPermission(api: Pick<Api, "getChatMember">): MayStop {
  return async (chat, stopper, askedBy) => {
    if (chat.type === "private" || stopper.id === askedBy) return true;
    if (stopper.kind !== "user") return stopper.kind === "group";
    const member = await api.getChatMember(chat.id, stopper.id);
    return member.status === "creator" || member.status === "administrator";
  };
}

/**
 * Who asked for the answer an inbox item runs: a message's sender, a button's presser, or a
 * scheduled run's task's creator.
 */
export async function askerOfUpdate(
  update: unknown,
  tasks: Pick<TaskStore, "get">,
): Promise<number | undefined> {
  const run = scheduledRunOf(update);
  if (run) return (await tasks.get(run.scheduled_task.task_id))?.createdBy;
  const { message, callback_query: query } = update as {
    message?: Message;
    callback_query?: { from: { id: number } };
  };
  if (query) return query.from.id;
  return message && senderOf(message)?.id;
}
