import { type Kysely, PostgresAdapter, sql } from "kysely";
import type { Database } from "../db/schema.js";
import type { RecallArea } from "./area.js";
import { MAX_CHUNKS } from "./embedding-worker.js";
import { recallFilter, type SearchOptions } from "./keyword-search.js";

/** What the exact search keeps of the scopes' vectors in memory, at most. */
export const DEFAULT_VECTOR_CACHE_BYTES = 256 * 1024 * 1024;
/** Vectors read from the database in one statement when a scope's are loaded. */
const LOAD_PAGE_ROWS = 10_000;

export type VectorEngine = "pgvector" | "exact";

/**
 * A scope's vectors as read, one row per chunk, with what the recall filter needs of its event
 * (when it was stored, in which conversation), so that the filter is applied before the ranking.
 */
type ScopeVectors = {
  lastId: number;
  count: number;
  dims: number;
  data: Float32Array;
  messageIds: Float64Array;
  /** The event's `created_at`, in ms since the epoch. */
  createdAt: Float64Array;
  /** The event's conversation, as an index into `conversations`. */
  conversation: Uint32Array;
  conversations: Map<string, number>;
  /** 1 where the event has left the scope since it was read: forgotten, deleted or moved away. */
  gone: Uint8Array;
};

/** A stored vector: float32 little-endian bytes (SQLite) or `real[]` (PostgreSQL). */
const vectorOf = (stored: Buffer | number[]): ArrayLike<number> =>
  Array.isArray(stored)
    ? stored
    : new Float32Array(
        stored.buffer.slice(stored.byteOffset, stored.byteOffset + stored.byteLength),
      );

type Column = Float32Array | Float64Array | Uint32Array | Uint8Array;

function resized<T extends Column>(column: T, length: number): T {
  const bigger = new (column.constructor as new (length: number) => T)(length);
  bigger.set(column);
  return bigger;
}

const bytesOf = (e: ScopeVectors) =>
  e.data.byteLength +
  e.messageIds.byteLength +
  e.createdAt.byteLength +
  e.conversation.byteLength +
  e.gone.byteLength;

function emptyEntry(dims: number): ScopeVectors {
  const rows = 1024;
  return {
    lastId: 0,
    count: 0,
    dims,
    data: new Float32Array(rows * dims),
    messageIds: new Float64Array(rows),
    createdAt: new Float64Array(rows),
    conversation: new Uint32Array(rows),
    conversations: new Map(),
    gone: new Uint8Array(rows),
  };
}

function grow(e: ScopeVectors): void {
  const rows = e.messageIds.length * 2;
  e.data = resized(e.data, rows * e.dims);
  e.messageIds = resized(e.messageIds, rows);
  e.createdAt = resized(e.createdAt, rows);
  e.conversation = resized(e.conversation, rows);
  e.gone = resized(e.gone, rows);
}

/**
 * Each row's similarity to the query (vectors are unit length: the dot product is the cosine);
 * -Infinity for a row the area's filter leaves out. This is recallFilter() in memory, but for
 * the scope and `forgotten_at`, which the rows found are checked against in SQL afterwards: the
 * dates and the asking context, which never change for a stored event, are applied here, before
 * any cut, so that a filtered search ranks among all the vectors it may find.
 */
function similarities(
  e: ScopeVectors,
  query: Float32Array,
  area: RecallArea,
  options: SearchOptions,
) {
  const scores = new Float32Array(e.count);
  // Both bounds are ISO instants, as `created_at` is: as numbers they compare as SQL's strings do.
  const since = options.since ? Date.parse(options.since) : Number.NEGATIVE_INFINITY;
  const until = options.until ? Date.parse(options.until) : Number.POSITIVE_INFINITY;
  const held = area.conversation === undefined ? undefined : e.conversations.get(area.conversation);
  const heldAfter = area.heldAfter ?? 0;
  const { data, dims, createdAt, conversation, messageIds, gone } = e;
  const q = query;
  for (let row = 0; row < e.count; row++) {
    const at = createdAt[row] as number;
    if (
      gone[row] === 1 ||
      at < since ||
      at >= until ||
      (conversation[row] === held && (messageIds[row] as number) > heldAfter)
    ) {
      scores[row] = Number.NEGATIVE_INFINITY;
      continue;
    }
    // Four sums side by side: V8 runs the loop about 1.6 times faster than with one (dims is a
    // multiple of 4, as every dimension Gemini offers is).
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    const base = row * dims;
    for (let i = 0; i < dims; i += 4) {
      s0 += (data[base + i] as number) * (q[i] as number);
      s1 += (data[base + i + 1] as number) * (q[i + 1] as number);
      s2 += (data[base + i + 2] as number) * (q[i + 2] as number);
      s3 += (data[base + i + 3] as number) * (q[i + 3] as number);
    }
    scores[row] = s0 + s1 + s2 + s3;
  }
  return scores;
}

/** The `k` rows of highest score, best first, leaving out those at -Infinity. */
function bestRows(scores: Float32Array, k: number): number[] {
  const best: number[] = [];
  let floor = Number.NEGATIVE_INFINITY;
  const byScore = (a: number, b: number) => (scores[b] as number) - (scores[a] as number);
  for (let row = 0; row < scores.length; row++) {
    const score = scores[row] as number;
    if (score === Number.NEGATIVE_INFINITY || (best.length >= k && score <= floor)) continue;
    best.push(row);
    if (best.length > k * 2) {
      best.sort(byScore);
      best.length = k;
      floor = scores[best[k - 1] as number] as number;
    }
  }
  return best.sort(byScore).slice(0, k);
}

/**
 * Nearest neighbours of a query vector among the embeddings of a recall area, by cosine
 * distance, exact (every vector the area's filter lets through is compared, whatever the filter
 * leaves out):
 * - PostgreSQL with pgvector installed (`create extension vector`): its `<=>` on `real[]` cast to
 *   `vector`, in C, the filter in the same query.
 * - Otherwise (SQLite, PostgreSQL without it): the scope's vectors are read once into memory (then
 *   only the rows added since), bounded by `cacheBytes` across scopes, least recently used dropped
 *   first (decision 0010 says why not sqlite-vec).
 */
export function createVectorSearch(deps: {
  db: Kysely<Database>;
  engine?: VectorEngine;
  cacheBytes?: number;
  /** Rows a statement reads when a scope's vectors are loaded (default LOAD_PAGE_ROWS). */
  loadPageRows?: number;
  /** Only this model's vectors are compared (a query of one model says nothing of another's). */
  model?: string;
}) {
  const { db } = deps;
  const pageRows = deps.loadPageRows ?? LOAD_PAGE_ROWS;
  const engine: VectorEngine = deps.engine ?? "exact";
  const cacheBytes = deps.cacheBytes ?? DEFAULT_VECTOR_CACHE_BYTES;
  const cache = new Map<string, ScopeVectors>();

  async function pgvector(area: RecallArea, query: Float32Array, options: SearchOptions) {
    // An event has at most MAX_CHUNKS vectors: this many nearest chunks hold `limit` events.
    const { rows } = await sql<{ id: number }>`
      select message_id as id from (
        select e.message_id, e.embedding::vector <=> ${Array.from(query)}::real[]::vector as d
        from embeddings e join messages m on m.id = e.message_id
        where e.scope = ${area.scope} and ${recallFilter("m", area, options)}
          ${deps.model === undefined ? sql`` : sql`and e.model = ${deps.model}`}
        order by d limit ${options.limit * MAX_CHUNKS}
      ) nearest group by message_id order by min(d) limit ${options.limit}`.execute(db);
    return rows.map((r) => Number(r.id));
  }

  async function loaded(scope: string): Promise<ScopeVectors | undefined> {
    let entry = cache.get(scope);
    // In pages: a large scope read in one statement could outlast PostgreSQL's statement limit
    // (src/db/postgres-pool.ts) on a slow link, and would hold every row's text at once.
    for (let full = true; full; ) {
      const rows = await db
        .selectFrom("embeddings as e")
        .innerJoin("messages as m", "m.id", "e.message_id")
        .select(["e.id", "e.message_id", "e.embedding", "m.chat_id", "m.created_at"])
        .where("e.scope", "=", scope)
        .$if(deps.model !== undefined, (q) => q.where("e.model", "=", deps.model as string))
        .where("e.id", ">", entry?.lastId ?? 0)
        .orderBy("e.id")
        .limit(pageRows)
        .execute();
      full = rows.length === pageRows;
      for (const row of rows) {
        const values = vectorOf(row.embedding);
        entry ??= emptyEntry(values.length);
        entry.lastId = Number(row.id);
        if (values.length !== entry.dims) continue;
        if ((entry.count + 1) * entry.dims > entry.data.length) grow(entry);
        const at = entry.count++;
        entry.data.set(values, at * entry.dims);
        entry.messageIds[at] = Number(row.message_id);
        entry.createdAt[at] = Date.parse(row.created_at);
        let conversation = entry.conversations.get(row.chat_id);
        if (conversation === undefined) {
          conversation = entry.conversations.size;
          entry.conversations.set(row.chat_id, conversation);
        }
        entry.conversation[at] = conversation;
      }
    }
    if (!entry) return undefined;
    // Most recently used last; the others go while the whole is over the bound.
    cache.delete(scope);
    cache.set(scope, entry);
    let total = [...cache.values()].reduce((sum, e) => sum + bytesOf(e), 0);
    for (const [other, e] of cache) {
      if (total <= cacheBytes || other === scope) break;
      cache.delete(other);
      total -= bytesOf(e);
    }
    return entry;
  }

  /** Which of `ids` are still events of the scope that may be recalled (not forgotten). */
  async function stillInScope(scope: string, ids: readonly number[]): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    const { rows } = await sql<{ id: number }>`select m.id from messages m
      where m.id in (${sql.join(ids)}) and ${recallFilter("m", { scope }, {})}`.execute(db);
    return new Set(rows.map((r) => Number(r.id)));
  }

  async function exact(area: RecallArea, query: Float32Array, options: SearchOptions) {
    const entry = await loaded(area.scope);
    if (!entry || entry.dims !== query.length) return [];
    const scores = similarities(entry, query, area, options);
    // The cache keeps what it read: an event forgotten, deleted or moved away since is found out
    // here, marked, and the next nearest take its place. Each round marks at least one event.
    for (;;) {
      const nearest = [
        ...new Set(bestRows(scores, options.limit * MAX_CHUNKS).map((r) => entry.messageIds[r])),
      ].slice(0, options.limit) as number[];
      const kept = await stillInScope(area.scope, nearest);
      if (kept.size === nearest.length) return nearest;
      const left = new Set(nearest.filter((id) => !kept.has(id)));
      for (let row = 0; row < entry.count; row++) {
        if (!left.has(entry.messageIds[row] as number)) continue;
        entry.gone[row] = 1;
        scores[row] = Number.NEGATIVE_INFINITY;
      }
    }
  }

  return {
    engine,
    /** Ids of the area's events nearest the query, nearest first, at most `options.limit`. */
    nearest(area: RecallArea, query: Float32Array, options: SearchOptions): Promise<number[]> {
      switch (engine) {
        case "pgvector":
          return pgvector(area, query, options);
        case "exact":
          return exact(area, query, options);
      }
    },
  };
}

export type VectorSearch = ReturnType<typeof createVectorSearch>;

/** Whether the database has pgvector installed (`create extension vector`), which it then uses. */
export async function hasPgvector(db: Kysely<Database>): Promise<boolean> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return false;
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension
    where extname = 'vector'`.execute(db);
  return Number(rows[0]?.n ?? 0) > 0;
}
