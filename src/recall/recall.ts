import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { RecallScope } from "../scope/recall-scope.js";
import type { ChatContext } from "../session/store.js";
import { type RecallArea, recallAreaOf } from "./area.js";
import { createKeywordSearch, type SearchHit, type SearchOptions } from "./keyword-search.js";

/** The conversation a recall is made from, and its scope (the turn's ToolContext carries both). */
export type Asking = { chatId: string; scope: RecallScope };

export type Recall = ReturnType<typeof createRecall>;

/** search_history's engine: what a conversation may recall, found by its words. */
export function createRecall(deps: {
  db: Kysely<Database>;
  /** The asking conversation's context (cached by the session store), to leave it out. */
  loadContext(chatId: string): Promise<ChatContext>;
}) {
  const keyword = createKeywordSearch({ db: deps.db });

  async function areaOf(asking: Asking): Promise<RecallArea> {
    const context = await deps.loadContext(asking.chatId);
    return recallAreaOf(asking, context.summary?.coversToId ?? 0);
  }

  return {
    keyword,
    areaOf,
    async search(asking: Asking, query: string, options: SearchOptions): Promise<SearchHit[]> {
      return keyword.search(await areaOf(asking), query, options);
    },
  };
}
