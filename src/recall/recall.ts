import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import type { RecallScope } from "../scope/recall-scope.js";
import type { ChatContext } from "../session/store.js";
import { type RecallArea, recallAreaOf } from "./area.js";
import type { Embed } from "./gemini-embedder.js";
import {
  createKeywordSearch,
  parseQuery,
  type SearchHit,
  type SearchOptions,
  snippetOf,
} from "./keyword-search.js";
import type { VectorSearch } from "./vector-search.js";

/** The conversation a recall is made from, and its scope (the turn's ToolContext carries both). */
export type Asking = { chatId: string; scope: RecallScope };

export type Recall = ReturnType<typeof createRecall>;

/** Each list's best ranks fused: a hit's score is the sum of 1 / (RRF_K + rank) over the lists. */
const RRF_K = 60;
/** How many of each list's best take part in the fusion. */
const FUSED_DEPTH = 50;

/** Reciprocal rank fusion of ranked id lists, best first; ties keep the newer (higher) id first. */
export function fuseRanks(lists: ReadonlyArray<readonly number[]>): number[] {
  const score = new Map<number, number>();
  for (const list of lists) {
    list.forEach((id, rank) => {
      score.set(id, (score.get(id) ?? 0) + 1 / (RRF_K + rank + 1));
    });
  }
  return [...score.entries()].sort((a, b) => b[1] - a[1] || b[0] - a[0]).map(([id]) => id);
}

/**
 * search_history's engine: what a conversation may recall (src/recall/area.ts), found by its
 * words and, with an embedder, by meaning, the two rankings fused.
 */
export function createRecall(deps: {
  db: Kysely<Database>;
  /** The asking conversation's context (cached by the session store), to leave it out. */
  loadContext(chatId: string): Promise<ChatContext>;
  /** Recall by meaning; absent (GEMINI_EMBEDDING_MODEL empty) it is by words only. */
  meaning?: { embed: Embed; vectors: VectorSearch };
  logger?: Logger;
}) {
  const keyword = createKeywordSearch({ db: deps.db });

  async function areaOf(asking: Asking): Promise<RecallArea> {
    const context = await deps.loadContext(asking.chatId);
    return recallAreaOf(asking, context.summary?.coversToId ?? 0);
  }

  /** The area's events nearest the query in meaning; none when the query cannot be embedded. */
  async function byMeaning(
    area: RecallArea,
    query: string,
    options: SearchOptions,
    signal: AbortSignal | undefined,
  ) {
    if (!deps.meaning) return [];
    try {
      const [vector] = await deps.meaning.embed([query], "RETRIEVAL_QUERY", signal);
      if (!vector) return [];
      return await deps.meaning.vectors.nearest(area, vector, options);
    } catch (error) {
      if (!signal?.aborted) {
        deps.logger?.warn({ err: error }, "search by meaning failed; searching by words only");
      }
      return [];
    }
  }

  /** The hits of ids found by meaning only, read from their rows. */
  async function hitsOf(ids: readonly number[], query: string): Promise<Map<number, SearchHit>> {
    if (ids.length === 0) return new Map();
    const rows = await deps.db
      .selectFrom("messages")
      .select(["id", "kind", "role", "created_at", "search_text"])
      .where("id", "in", [...ids])
      .execute();
    const terms = parseQuery(query);
    return new Map(
      rows.map((row) => [
        row.id,
        {
          id: row.id,
          createdAt: row.created_at,
          role: row.kind === "compaction" ? "summary" : (row.role ?? "user"),
          snippet: snippetOf(row.search_text, terms),
        },
      ]),
    );
  }

  return {
    keyword,
    areaOf,
    /** `signal` gives up on the search by meaning (the turn was stopped); words still find. */
    async search(
      asking: Asking,
      query: string,
      options: SearchOptions,
      signal?: AbortSignal,
    ): Promise<SearchHit[]> {
      const area = await areaOf(asking);
      const depth = { ...options, limit: Math.max(options.limit, FUSED_DEPTH) };
      const [words, meaning] = await Promise.all([
        keyword.search(area, query, depth),
        byMeaning(area, query, depth, signal),
      ]);
      if (meaning.length === 0) return words.slice(0, options.limit);
      const best = fuseRanks([words.map((h) => h.id), meaning]).slice(0, options.limit);
      const byWords = new Map(words.map((h) => [h.id, h]));
      const others = await hitsOf(
        best.filter((id) => !byWords.has(id)),
        query,
      );
      return best
        .map((id) => byWords.get(id) ?? others.get(id))
        .filter((hit): hit is SearchHit => hit !== undefined);
    },
  };
}
