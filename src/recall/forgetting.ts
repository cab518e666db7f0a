import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { KeywordSearch } from "./keyword-search.js";
import type { ProfileEntry, Profiles } from "./profile.js";

export type ForgetAsked = {
  /** Profile entries removed at once. */
  removed: ProfileEntry[];
  /** Stored events that have every word, not yet forgotten. */
  matching: number;
  /** The request a confirmation button names; absent when no event matches. */
  requestId?: number;
};

export type ForgetConfirmed =
  | { status: "hidden"; events: number; words: string }
  | { status: "unknown" }
  | { status: "done-before"; words: string };

/**
 * /forget: the profile entries that match go at once; the matching events of the scope are
 * hidden from recall only after a confirmation, and only those that match when it comes. Rows
 * stay (history and thought signatures remain valid), marked `forgotten_at`; `onForgotten` drops
 * whatever else was derived from them (embeddings).
 */
export function createForgetting(deps: {
  db: Kysely<Database>;
  profiles: Profiles;
  keyword: KeywordSearch;
  onForgotten?(ids: readonly number[]): Promise<void>;
  now?: () => Date;
}) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());
  const matching = (scope: string, words: string) => deps.keyword.matchingIds({ scope }, words);

  return {
    async ask(scope: string, words: string): Promise<ForgetAsked> {
      const removed = await deps.profiles.forget(scope, words);
      const ids = await matching(scope, words);
      if (ids.length === 0) return { removed, matching: 0 };
      const { id } = await db
        .insertInto("forget_requests")
        .values({ scope, words, created_at: now().toISOString(), done_at: null })
        .returning("id")
        .executeTakeFirstOrThrow();
      return { removed, matching: ids.length, requestId: id };
    },

    /** Hides the events a request matches; only from the scope that asked. */
    async confirm(scope: string, requestId: number): Promise<ForgetConfirmed> {
      const request = await db
        .selectFrom("forget_requests")
        .select(["words", "done_at"])
        .where("id", "=", requestId)
        .where("scope", "=", scope)
        .executeTakeFirst();
      if (!request) return { status: "unknown" };
      if (request.done_at !== null) return { status: "done-before", words: request.words };
      const ids = await matching(scope, request.words);
      const at = now().toISOString();
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < ids.length; i += 500) {
          await trx
            .updateTable("messages")
            .set({ forgotten_at: at })
            .where("scope", "=", scope)
            .where("id", "in", ids.slice(i, i + 500))
            .execute();
        }
        await trx
          .updateTable("forget_requests")
          .set({ done_at: at })
          .where("id", "=", requestId)
          .execute();
      });
      await deps.onForgotten?.(ids);
      return { status: "hidden", events: ids.length, words: request.words };
    },
  };
}

export type Forgetting = ReturnType<typeof createForgetting>;
