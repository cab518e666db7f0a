import type { Update } from "grammy/types";
import { z } from "zod";
import type { Logger } from "../logger.js";
import type { Inbox } from "../queue/inbox.js";
import { type BotIdentity, rejectionHtml, routeUpdate } from "./access.js";
import type { Delivery } from "./delivery.js";

/**
 * The parts of an update Koroku relies on. Anything else passes through untouched; a body that
 * doesn't even have these is answered 400 instead of failing somewhere later.
 */
export const updateSchema = z.looseObject({
  update_id: z.number().int().nonnegative(),
  message: z
    .looseObject({
      message_id: z.number().int(),
      chat: z.looseObject({ id: z.number().int(), type: z.string() }),
      from: z.looseObject({ id: z.number().int(), is_bot: z.boolean() }).optional(),
      text: z.string().optional(),
    })
    .optional(),
});

export type IngestResult = "stored" | "duplicate" | "rejected" | "ignored";

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
  onStored(): void;
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
  return async (update) => {
    const route = routeUpdate(update, allowed, deps.bot);
    if (route.action === "ignore") return "ignored";
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
    const stored = await deps.inbox.add(update.update_id, route.conversation, update);
    if (stored) deps.onStored();
    return stored ? "stored" : "duplicate";
  };
}
