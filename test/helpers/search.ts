import type { Kysely } from "kysely";
import type { Database } from "../../src/db/schema.js";
import { scopeArea } from "../../src/recall/area.js";
import { createKeywordSearch, type SearchOptions } from "../../src/recall/keyword-search.js";

/** Keyword search over the whole recall scope of a conversation, its own events included. */
export function scopeSearch(db: Kysely<Database>) {
  const keyword = createKeywordSearch({ db });
  return (conversation: string, query: string, options: SearchOptions) =>
    keyword.search(scopeArea(conversation), query, options);
}
