import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { KeywordSearch } from "./keyword-search.js";
import type { ProfileEntry, Profiles } from "./profile.js";
import type { ScopeMemoryEntries } from "./scope-memory.js";

export type ForgetAsked = {
  /** Profile entries removed at once. */
  removed: ProfileEntry[];
  /** Stored events that have every word, not yet forgotten. */
  matching: number;
  /** Entries of the scope's memory files (summaries) that have every word. */
  memoryEntries: number;
  /** The request a confirmation button names; absent when nothing matches. */
  requestId?: number;
};

export type ForgetConfirmed =
  | { status: "hidden"; events: number; memoryEntries: number; words: string }
  | { status: "unknown" }
  | { status: "done-before"; words: string };

/**
 * /forget: the profile entries that match go at once; the matching events of the scope are
 * hidden from recall, and the matching entries of its memory files deleted, only after a
 * confirmation, and only those that match when it comes. Event rows stay (history and thought
 * signatures remain valid), marked `forgotten_at`; `onForgotten` drops whatever else was derived
 * from them (embeddings).
 */
export function createForgetting(deps: {
  db: Kysely<Database>;
  profiles: Profiles;
  keyword: KeywordSearch;
  /** The scope's memory files (MEMORY_DIR); absent, they are left as they are. */
  memory?: Pick<ScopeMemoryEntries, "count" | "remove">;
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
      const memoryEntries = (await deps.memory?.count(scope, words)) ?? 0;
      if (ids.length === 0 && memoryEntries === 0) return { removed, matching: 0, memoryEntries };
      const { id } = await db
        .insertInto("forget_requests")
        .values({ scope, words, created_at: now().toISOString(), done_at: null })
        .returning("id")
        .executeTakeFirstOrThrow();
      return { removed, matching: ids.length, memoryEntries, requestId: id };
    },

    /**
     * Hides the events a request matches and deletes its memory entries; only in the scope that
     * asked. The files go first: a confirmation that fails after them is tried again in full.
     */
    async confirm(scope: string, requestId: number): Promise<ForgetConfirmed> {
      const request = await db
        .selectFrom("forget_requests")
        .select(["words", "done_at"])
        .where("id", "=", requestId)
        .where("scope", "=", scope)
        .executeTakeFirst();
      if (!request) return { status: "unknown" };
      if (request.done_at !== null) return { status: "done-before", words: request.words };
      const memoryEntries = (await deps.memory?.remove(scope, request.words)) ?? 0;
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
      return { status: "hidden", events: ids.length, memoryEntries, words: request.words };
    },
  };
}

export type Forgetting = ReturnType<typeof createForgetting>;
