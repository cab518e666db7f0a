import { type Kysely, PostgresAdapter, sql } from "kysely";
import type { Database } from "../db/schema.js";
import type { RecallArea } from "./area.js";
import { recallFilter, type SearchOptions } from "./keyword-search.js";

/** Nearest chunks looked at before the area's filter leaves out the asking context and the rest. */
const CANDIDATES = 200;
/** What the exact search on PostgreSQL keeps of the scopes' vectors in memory, at most. */
export const DEFAULT_VECTOR_CACHE_BYTES = 256 * 1024 * 1024;

export type VectorEngine = "pgvector" | "exact";

type ScopeVectors = {
  lastId: number;
  messageIds: number[];
  data: Float32Array;
  dims: number;
  count: number;
};

/** A stored vector: float32 little-endian bytes (SQLite) or `real[]` (PostgreSQL). */
const vectorOf = (stored: Buffer | number[]): ArrayLike<number> =>
  Array.isArray(stored)
    ? stored
    : new Float32Array(
        stored.buffer.slice(stored.byteOffset, stored.byteOffset + stored.byteLength),
      );

const pgvectorLiteral = (v: Float32Array) => `[${Array.from(v).join(",")}]`;

/**
 * Nearest neighbours of a query vector among the embeddings of a recall area, by cosine
 * distance, exact (every vector of the scope is compared):
 * - PostgreSQL with pgvector installed (`create extension vector`): its `<=>` on `real[]` cast to
 *   `vector`, in C.
 * - Otherwise (SQLite, PostgreSQL without it): the scope's vectors are read once into memory (then
 *   only the rows added since), bounded by `cacheBytes` across scopes, least recently used dropped
 *   first (decision 0010 says why not sqlite-vec).
 */
export function createVectorSearch(deps: {
  db: Kysely<Database>;
  engine?: VectorEngine;
  cacheBytes?: number;
}) {
  const { db } = deps;
  const engine: VectorEngine = deps.engine ?? "exact";
  const cacheBytes = deps.cacheBytes ?? DEFAULT_VECTOR_CACHE_BYTES;
  const cache = new Map<string, ScopeVectors>();

  /** Message ids of the area that pass its filter, in the order of `ranked`. */
  async function filtered(area: RecallArea, ranked: readonly number[], options: SearchOptions) {
    if (ranked.length === 0) return [];
    const { rows } = await sql<{ id: number }>`select m.id from messages m
      where m.id in (${sql.join(ranked)}) and ${recallFilter("m", area, options)}`.execute(db);
    const allowed = new Set(rows.map((r) => Number(r.id)));
    return ranked.filter((id) => allowed.has(id)).slice(0, options.limit);
  }

  async function pgvector(area: RecallArea, query: Float32Array, options: SearchOptions) {
    const { rows } = await sql<{ id: number }>`
      select message_id as id, min(d) as d from (
        select message_id, embedding::vector <=> ${pgvectorLiteral(query)}::vector as d
        from embeddings where scope = ${area.scope}
        order by d limit ${CANDIDATES}
      ) nearest group by message_id order by min(d)`.execute(db);
    return filtered(
      area,
      rows.map((r) => Number(r.id)),
      options,
    );
  }

  async function loaded(scope: string): Promise<ScopeVectors | undefined> {
    let entry = cache.get(scope);
    const rows = await db
      .selectFrom("embeddings")
      .select(["id", "message_id", "embedding"])
      .where("scope", "=", scope)
      .where("id", ">", entry?.lastId ?? 0)
      .orderBy("id")
      .execute();
    if (!entry && rows.length === 0) return undefined;
    for (const row of rows) {
      const values = vectorOf(row.embedding);
      entry ??= {
        lastId: 0,
        messageIds: [],
        data: new Float32Array(values.length * 1024),
        dims: values.length,
        count: 0,
      };
      if (values.length !== entry.dims) continue;
      if ((entry.count + 1) * entry.dims > entry.data.length) {
        const grown = new Float32Array(entry.data.length * 2);
        grown.set(entry.data);
        entry.data = grown;
      }
      entry.data.set(values, entry.count * entry.dims);
      entry.messageIds.push(Number(row.message_id));
      entry.count++;
      entry.lastId = Number(row.id);
    }
    if (!entry) return undefined;
    // Most recently used last; the others go while the whole is over the bound.
    cache.delete(scope);
    cache.set(scope, entry);
    let total = [...cache.values()].reduce((sum, e) => sum + e.data.byteLength, 0);
    for (const [other, e] of cache) {
      if (total <= cacheBytes || other === scope) break;
      cache.delete(other);
      total -= e.data.byteLength;
    }
    return entry;
  }

  async function exact(area: RecallArea, query: Float32Array, options: SearchOptions) {
    const entry = await loaded(area.scope);
    if (!entry || entry.dims !== query.length) return [];
    // The best CANDIDATES by similarity (vectors are unit length: the dot product is the cosine).
    const best: Array<{ id: number; score: number }> = [];
    let floor = Number.NEGATIVE_INFINITY;
    const { data, dims } = entry;
    // Four sums side by side: V8 runs the loop about 1.6 times faster than with one (dims is a
    // multiple of 4, as every dimension Gemini offers is).
    const q = query;
    for (let row = 0; row < entry.count; row++) {
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
      const dot = s0 + s1 + s2 + s3;
      if (best.length >= CANDIDATES && dot <= floor) continue;
      best.push({ id: entry.messageIds[row] as number, score: dot });
      if (best.length > CANDIDATES * 2) {
        best.sort((a, b) => b.score - a.score);
        best.length = CANDIDATES;
        floor = (best.at(-1) as { score: number }).score;
      }
    }
    best.sort((a, b) => b.score - a.score);
    const ranked = [...new Set(best.slice(0, CANDIDATES).map((b) => b.id))];
    return filtered(area, ranked, options);
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
