import { type Kysely, PostgresAdapter, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.js";
import type { RecallArea } from "./area.js";

/**
 * Ranked full-text search over one recall area's stored events, the same on both databases:
 * SQLite's FTS5 table `messages_fts` and PostgreSQL's `messages.search_tsv` (a GIN-indexed
 * tsvector), both kept up to date by the database itself in the statement that appends an event
 * (see migrations/20261202033000_full_text_search.ts). What is indexed is each event's
 * `search_text`, made by eventText() (src/session/event-text.ts).
 */

/** Only this much of an event's text is indexed (PostgreSQL's tsvector holds at most 1 MB). */
export const INDEXED_CHARS = 100_000;
const MAX_TERMS = 10;
/**
 * How many of the newest matching events are ranked. A query as common as a word in every tenth
 * message would otherwise rank tens of thousands; past this many, older matches wait for a
 * narrower query or a date filter (until).
 */
export const RANKED_CANDIDATES = 2_000;
const SNIPPET_CHARS = 200;
const SNIPPET_LEAD = 60;

export type SearchHit = {
  id: number;
  createdAt: string;
  /** `user`, `model`, or `summary` for a compaction. */
  role: string;
  /** A short piece of the event around the first hit. */
  snippet: string;
};

export type SearchOptions = {
  limit: number;
  /** ISO instants: only events stored at or after `since`, and before `until`. */
  since?: string;
  until?: string;
};

/** One thing to find: a word, or several in a row (a phrase); `prefix` lets the last one go on. */
type Term = { words: string[]; prefix: boolean };

/** Words as both indexes cut them: runs of letters and digits, lower-cased. */
export const wordsOf = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/**
 * The query's terms: `"exact words"` is a phrase, `word*` a prefix (also `"some phr"*`), any other
 * word must appear. A bare word that is several to the indexes ("e-mail") is a phrase of them.
 */
export function parseQuery(query: string): Term[] {
  const terms: Term[] = [];
  for (const m of query.matchAll(/"([^"]*)"(\*?)|(\S+)/g)) {
    const raw = m[1] ?? (m[3] as string);
    const prefix = m[1] !== undefined ? m[2] === "*" : raw.endsWith("*");
    const words = wordsOf(raw);
    if (words.length > 0) terms.push({ words, prefix });
  }
  return terms.slice(0, MAX_TERMS);
}

/** Several single words: the same words side by side, in order, rank first. */
function phraseOfWords(terms: readonly Term[]): Term | undefined {
  if (terms.length < 2 || terms.some((t) => t.words.length > 1 || t.prefix)) return undefined;
  return { words: terms.flatMap((t) => t.words), prefix: false };
}

// Words are letters and digits only, so quoting them is safe in both query languages.
const fts5Term = (t: Term) => `"${t.words.join(" ")}"${t.prefix ? "*" : ""}`;
const tsqueryTerm = (t: Term) => {
  const words = t.words.map((w, i) => `'${w}'${t.prefix && i === t.words.length - 1 ? ":*" : ""}`);
  return words.length === 1 ? (words[0] as string) : `(${words.join(" <-> ")})`;
};

/**
 * The piece of `text` around the first place a term is found, whole words at its ends, with "…"
 * where it was cut; the start of the text when no term is found in it as written.
 */
export function snippetOf(text: string, terms: readonly Term[]): string {
  const flat = text.replace(/\s+/g, " ").trim();
  let at = -1;
  for (const term of terms) {
    const [first = ""] = term.words;
    const end = term.prefix && term.words.length === 1 ? "" : "(?![\\p{L}\\p{N}])";
    const found = new RegExp(`(?<![\\p{L}\\p{N}])${first}${end}`, "iu").exec(flat);
    if (found && (at === -1 || found.index < at)) at = found.index;
  }
  let start = Math.max(0, at - SNIPPET_LEAD);
  let stop = Math.min(flat.length, start + SNIPPET_CHARS);
  if (start > 0) start = flat.indexOf(" ", start) + 1 || start;
  if (stop < flat.length)
    stop = flat.lastIndexOf(" ", stop) > start ? flat.lastIndexOf(" ", stop) : stop;
  // A cut that falls inside a surrogate pair (no space near) leaves U+FFFD, not half a character.
  const piece = flat.slice(start, stop).toWellFormed();
  return `${start > 0 ? "…" : ""}${piece}${stop < flat.length ? "…" : ""}`;
}

type HitRow = {
  id: number;
  kind: string;
  role: string | null;
  created_at: string;
  search_text: string;
};

/**
 * The conditions on a `messages` row (under `table`) that every recall applies: its scope, not
 * forgotten, not in the asking context, within the dates.
 */
export function recallFilter(
  table: string,
  area: RecallArea,
  options: Pick<SearchOptions, "since" | "until">,
): RawBuilder<unknown> {
  const col = (name: string) => sql.ref(`${table}.${name}`);
  const held =
    area.conversation === undefined
      ? sql``
      : sql`and not (${col("chat_id")} = ${area.conversation} and ${col("id")} > ${area.heldAfter ?? 0})`;
  return sql`${col("scope")} = ${area.scope} and ${col("forgotten_at")} is null ${held}
    ${options.since ? sql`and ${col("created_at")} >= ${options.since}` : sql``}
    ${options.until ? sql`and ${col("created_at")} < ${options.until}` : sql``}`;
}

export type KeywordSearch = ReturnType<typeof createKeywordSearch>;

export function createKeywordSearch(deps: { db: Kysely<Database> }) {
  const { db } = deps;
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  function sqliteRows(area: RecallArea, terms: Term[], options: SearchOptions) {
    const all = terms.map(fts5Term).join(" AND ");
    const phrase = phraseOfWords(terms);
    // A phrase matches only where its words all do: OR-ing it in changes no result, only ranks
    // the rows that have the words side by side first (BM25 counts it as one more term).
    const match = phrase ? `(${all}) OR ${fts5Term(phrase)}` : all;
    // The index is walked newest first, each hit checked against the area, and stops at
    // the cap; the candidates are ranked, and only the best are read whole.
    return sql<HitRow>`
      select m.id, m.kind, m.role, m.created_at, m.search_text
      from (
        select id, score from (
          select messages_fts.rowid as id, bm25(messages_fts) as score
          from messages_fts join messages c on c.id = messages_fts.rowid
          where messages_fts match ${match} and ${recallFilter("c", area, options)}
          order by messages_fts.rowid desc
          limit ${RANKED_CANDIDATES}
        ) order by score, id desc
        limit ${options.limit}
      ) best join messages m on m.id = best.id
      order by best.score, best.id desc`.execute(db);
  }

  function postgresRows(area: RecallArea, terms: Term[], options: SearchOptions) {
    const query = sql`to_tsquery('simple', ${terms.map(tsqueryTerm).join(" & ")})`;
    const phrase = phraseOfWords(terms);
    // A row with the exact phrase ranks above all others; then ts_rank (how often the words occur).
    const phraseMatch = phrase
      ? sql`search_tsv @@ to_tsquery('simple', ${tsqueryTerm(phrase)})`
      : sql`false`;
    return sql<HitRow>`
      select m.id, m.kind, m.role, m.created_at, m.search_text
      from (
        select id, ${phraseMatch} as phrase, ts_rank(search_tsv, ${query}) as rank
        from (
          select id, search_tsv from messages
          where search_tsv @@ ${query} and ${recallFilter("messages", area, options)}
          order by id desc
          limit ${RANKED_CANDIDATES}
        ) candidates
        order by phrase desc, rank desc, id desc
        limit ${options.limit}
      ) best join messages m on m.id = best.id
      order by best.phrase desc, best.rank desc, best.id desc`.execute(db);
  }

  /**
   * Every event of the area that has all the query's words, unranked and uncapped (what a
   * /forget hides), oldest first.
   */
  async function matchingIds(area: RecallArea, query: string): Promise<number[]> {
    const terms = parseQuery(query);
    if (terms.length === 0) return [];
    const { rows } = await (postgres
      ? sql<{ id: number }>`select id from messages
          where search_tsv @@ to_tsquery('simple', ${terms.map(tsqueryTerm).join(" & ")})
            and ${recallFilter("messages", area, {})}
          order by id`.execute(db)
      : sql<{
          id: number;
        }>`select c.id from messages_fts join messages c on c.id = messages_fts.rowid
          where messages_fts match ${terms.map(fts5Term).join(" AND ")}
            and ${recallFilter("c", area, {})}
          order by c.id`.execute(db));
    return rows.map((r) => Number(r.id));
  }

  /** Best matches first; of equally good ones, the newest. Searches and their results are never indexed. */
  async function search(
    area: RecallArea,
    query: string,
    options: SearchOptions,
  ): Promise<SearchHit[]> {
    const terms = parseQuery(query);
    if (terms.length === 0) return [];
    const { rows } = await (postgres
      ? postgresRows(area, terms, options)
      : sqliteRows(area, terms, options));
    return rows.map((row) => ({
      id: row.id,
      createdAt: row.created_at,
      role: row.kind === "compaction" ? "summary" : (row.role ?? "user"),
      snippet: snippetOf(row.search_text, terms),
    }));
  }

  return { search, matchingIds };
}
