import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";

export type PendingTopicNames = ReturnType<typeof createPendingTopicNames>;

/**
 * Topics /new opened whose first message has not named them yet, by conversation key. Kept in the
 * database: the first message may be run by another replica, or after a restart.
 */
export function createPendingTopicNames(deps: { db: Kysely<Database>; now?: () => Date }) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());
  return {
    async remember(conversation: string): Promise<void> {
      await db
        .insertInto("pending_topic_names")
        .values({ conversation, created_at: now().toISOString() })
        .onConflict((oc) => oc.column("conversation").doNothing())
        .execute();
    },
    /** True once for a topic waiting for its name: the caller names it. */
    async take(conversation: string): Promise<boolean> {
      const taken = await db
        .deleteFrom("pending_topic_names")
        .where("conversation", "=", conversation)
        .returning("conversation")
        .execute();
      return taken.length > 0;
    },
  };
}
