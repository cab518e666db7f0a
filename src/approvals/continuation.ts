import type { Kysely } from "kysely";
import { z } from "zod";
import type { Database } from "../db/schema.js";

/**
 * A continuation's inbox row has an update_id below every scheduled run's and every Telegram
 * update's, ordered by the approval's id: one row per approval, so that an answer and its
 * expiry can never go on twice. Safe integers all: the base leaves 2^52 approvals.
 */
export const CONTINUATION_UPDATE_BASE = Number.MIN_SAFE_INTEGER;

/** What the inbox holds for a turn that goes on after an approval was answered or ran out. */
export const continuationSchema = z.object({
  update_id: z.number().int(),
  approval_continuation: z.object({ approval_id: z.number().int(), conversation: z.string() }),
});
export type Continuation = z.infer<typeof continuationSchema>;

export function continuationOf(update: unknown): Continuation | undefined {
  const parsed = continuationSchema.safeParse(update);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Queues the turn that goes on after an approval: in the inbox, in order with its conversation's
 * messages, so that whichever replica is up runs it, after a restart too. Once per approval.
 */
export async function enqueueContinuation(
  db: Kysely<Database>,
  approval: { id: number; conversation: string },
  now: () => number = Date.now,
): Promise<void> {
  const updateId = CONTINUATION_UPDATE_BASE + approval.id;
  const update: Continuation = {
    update_id: updateId,
    approval_continuation: { approval_id: approval.id, conversation: approval.conversation },
  };
  await db
    .insertInto("inbox")
    .values({
      update_id: updateId,
      chat_id: approval.conversation,
      update_json: JSON.stringify(update),
      status: "pending",
      received_at: new Date(now()).toISOString(),
    })
    .onConflict((oc) => oc.column("update_id").doNothing())
    .execute();
}
