import type { Message, Update } from "grammy/types";
import type { Delivery } from "../answer/delivery.js";
import type { Logger } from "../logger.js";
import type { Inbox, StopTarget } from "../queue/inbox.js";
import type { RunningAnswers } from "../queue/running-answers.js";
import { escapeHtml } from "../render/markdown-html.js";
import { conversationKey } from "../scope/conversation-key.js";
import {
  type BotIdentity,
  isStopCommand,
  rejectionHtml,
  routeUpdate,
  type Sender,
  senderOf,
} from "./access.js";
import type { MayStop } from "./stop-permission.js";
import { threadOfMessage } from "./topics.js";

/** `stopped`: a stop (button or /stop), handled at once and not stored. */
export type IngestResult = "stored" | "duplicate" | "rejected" | "ignored" | "stopped";

export const NOTHING_TO_STOP = "There is no answer being written to stop.";
export const STOP_FAILED =
  "I could not stop the answer: the database did not answer. Please try again in a moment.";
export const NOT_YOURS_TO_STOP =
  "Only the person who asked, or an admin of this group, can stop this answer.";
export const STOP_UNCHECKED =
  "I could not stop the answer: Telegram did not tell me whether you are an admin of this group. Please try again in a moment.";

/** Whether whoever stops may stop the answer asked for by `askedBy` (see MayStop). */
export type StopCheck = (askedBy: number | undefined) => Promise<boolean>;

/** A user who is not allowed is told so once in this time, however many messages they send. */
export const REJECTION_QUIET_MS = 60 * 60 * 1000;
// Bounds the memory strangers can make this process spend; past it the oldest are forgotten.
const MAX_TOLD_USERS = 10_000;

export type Ingest = (update: Update) => Promise<IngestResult>;

/**
 * Where every update enters, from the webhook or from polling: routed, then stored in the inbox
 * before anyone acknowledges it. Throws only when the inbox cannot store it (so it is not acked).
 */
export function createIngest(deps: {
  inbox: Inbox;
  delivery: Delivery;
  allowedUserIds: readonly number[];
  bot: BotIdentity;
  logger: Logger;
  /**
   * An update was stored for `conversation` (the inbox's chat); an album's item may run only once
   * its album has settled.
   */
  onStored(stored: { album: boolean; conversation: string | null }): void;
  /** Answers being written; a stop reaches them from here, ahead of the inbox's order. */
  answers?: RunningAnswers;
  /**
   * With replicas: a stop for no answer written here goes to the replica writing it; true when
   * one is (src/queue/replica-stops.ts), "refused" when `may` let none of them be stopped.
   */
  stopElsewhere?(target: StopTarget, may?: StopCheck): Promise<boolean | "refused">;
  /** Who may stop a group's answer (the person who asked, or an admin); anyone without it. */
  mayStop?: MayStop;
  /**
   * Cancels the conversation's tool calls that wait for approval, when `may` lets the stopper:
   * true when some were, "refused" when `may` did not.
   */
  cancelWaiting?(conversation: string, may: StopCheck): Promise<boolean | "refused">;
  now?: () => number;
}): Ingest {
  const allowed = new Set(deps.allowedUserIds);
  const now = deps.now ?? Date.now;
  // When each stranger was last told, oldest first (a Map keeps insertion order).
  const told = new Map<number, number>();
  /** Whether to tell this user now; a yes is remembered, and starts their quiet hour. */
  const timeToTell = (userId: number) => {
    const at = told.get(userId);
    if (at !== undefined && now() - at < REJECTION_QUIET_MS) return false;
    told.delete(userId);
    told.set(userId, now());
    if (told.size > MAX_TOLD_USERS) told.delete(told.keys().next().value as number);
    return true;
  };
  /** Stops a draft's answer: here, or on the replica writing it when it is not written here. */
  async function stopDraft(target: { chatId: number; draftId: number }): Promise<void> {
    if (deps.answers?.stopDraft(target.chatId, target.draftId) || !deps.stopElsewhere) return;
    await deps.stopElsewhere(target).catch((error: unknown) => {
      deps.logger.warn({ err: error }, "could not pass a stop on to the other replicas");
    });
  }

  /**
   * A stop also cancels the conversation's tool calls that wait for approval: while one waits no
   * answer is being written, and a turn that is ending because it waits no longer sees a stop.
   */
  async function cancelWaiting(conversation: string, may: StopCheck): Promise<void> {
    await deps.cancelWaiting?.(conversation, may).catch((error: unknown) => {
      deps.logger.warn({ err: error }, "could not cancel the tool calls waiting for approval");
    });
  }

  /**
   * /stop: ends the conversation's answer, here or on another replica, if `stopper` may stop it.
   * What to tell them otherwise.
   */
  async function stopCommand(
    message: Message,
    conversation: string,
    stopper: Sender,
  ): Promise<string | undefined> {
    const may: StopCheck = (askedBy) =>
      deps.mayStop ? deps.mayStop(message.chat, stopper, askedBy) : Promise.resolve(true);
    const here = deps.answers?.runningIn(conversation);
    if (here) {
      const allowed = await may(here.askedBy).catch((error: unknown) => {
        deps.logger.warn({ err: error }, "could not ask Telegram who administers the group");
        return undefined;
      });
      if (allowed === undefined) return STOP_UNCHECKED;
      if (!allowed) return NOT_YOURS_TO_STOP;
      here.stop();
      await cancelWaiting(conversation, may);
      return undefined;
    }
    try {
      const stopped = deps.stopElsewhere ? await deps.stopElsewhere({ conversation }, may) : false;
      if (stopped === "refused") return NOT_YOURS_TO_STOP;
      // See cancelWaiting: with no answer being written, the conversation may wait for one.
      const cancelled = (await deps.cancelWaiting?.(conversation, may)) ?? false;
      if (cancelled === "refused") return NOT_YOURS_TO_STOP;
      return stopped || cancelled ? undefined : NOTHING_TO_STOP;
    } catch (error) {
      deps.logger.warn({ err: error }, "could not pass a stop on");
      return STOP_FAILED;
    }
  }

  return async (update) => {
    const pressed = update.stopped_message_generation;
    if (pressed) {
      // Drafts exist in private chats only, whose id is their user's: whoever presses may stop.
      if (!allowed.has(pressed.chat.id)) return "ignored";
      const { id: chatId } = pressed.chat;
      const draftId = pressed.draft_id;
      await stopDraft({ chatId, draftId });
      // A draft in a topic (of a private chat with topics) is of the topic's conversation.
      const conversation = conversationKey({ chatId, threadId: pressed.message_thread_id });
      await cancelWaiting(conversation, async () => true);
      return "stopped";
    }
    const route = routeUpdate(update, allowed, deps.bot);
    if (route.action === "ignore") {
      const { message } = update;
      const log = { update_id: update.update_id, chat_id: message?.chat.id, why: route.why };
      // Someone addressed the bot and was turned away: the operator may want to know who.
      if (route.who !== undefined)
        deps.logger.info({ ...log, sender_id: route.who }, "ignored a message");
      else deps.logger.debug(log, "ignored an update");
      return "ignored";
    }
    const stopper = update.message && senderOf(update.message);
    if (
      route.action === "run" &&
      update.message &&
      stopper &&
      isStopCommand(update.message, deps.bot)
    ) {
      const { message } = update;
      const refusal = await stopCommand(message, route.conversation, stopper);
      if (refusal !== undefined) {
        deps.delivery
          .sendHtml(message.chat.id, escapeHtml(refusal), threadOfMessage(message))
          .catch((error: unknown) =>
            deps.logger.warn({ err: error }, "could not say why nothing was stopped"),
          );
      }
      return "stopped";
    }
    if (route.action === "reject") {
      const log = { user_id: route.userId, update_id: update.update_id };
      // Answering every message would let a stranger make the bot send as much as they like.
      if (!timeToTell(route.userId)) {
        deps.logger.info(log, "message from a user not on the allowlist, who was already told");
        return "rejected";
      }
      deps.logger.info(log, "message from a user not on the allowlist");
      deps.delivery
        .sendHtml(route.chatId, rejectionHtml(route.userId), route.threadId)
        .catch((error: unknown) =>
          deps.logger.warn({ err: error }, "could not answer a user who is not allowed"),
        );
      return "rejected";
    }
    const album = update.message?.media_group_id;
    const stored = await deps.inbox.add(update.update_id, route.conversation, update, album);
    if (stored) deps.onStored({ album: album !== undefined, conversation: route.conversation });
    return stored ? "stored" : "duplicate";
  };
}
