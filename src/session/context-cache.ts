import { LRUCache } from "lru-cache";
import type { ChatContext } from "./store.js";

export type CacheEntry = ChatContext & {
  /** Every row up to this id has been seen. */
  lastId: number;
  /** Rows after lastId that this process appended itself and already holds parsed. */
  own: ReadonlySet<number>;
  /** What the parsed context holds in memory, roughly (see memoryOf). */
  bytes: number;
};

/** A parsed event's objects, beyond its text. */
const EVENT_OVERHEAD_BYTES = 400;

/**
 * Memory a parsed event holds, estimated from its token estimate (4 characters per token, up to
 * 2 bytes per character): a tool result can be a 256 KiB file, so counting events would not bound
 * memory.
 */
export function memoryOf(events: readonly { estimatedTokens: number }[]): number {
  let bytes = 0;
  for (const e of events) bytes += EVENT_OVERHEAD_BYTES + 8 * e.estimatedTokens;
  return bytes;
}

export const contextMemory = (context: ChatContext): number =>
  memoryOf(context.events) + (context.summary ? memoryOf([context.summary]) : 0);

/**
 * Parsed contexts of recently active chats, least recently used dropped first once their bytes
 * pass `maxBytes` (a context larger than the whole budget is not kept). Appends go into the cache
 * as they are written, and a load only asks the database which ids are newer than the last one
 * seen (plus the anchor row, to notice a /clear done elsewhere); rows are read and parsed only
 * when another process wrote them. So a turn costs the same whether the context holds 30 events
 * or 10,000.
 */
export type ContextCache = LRUCache<string, CacheEntry>;

export const createContextCache = (maxBytes: number): ContextCache =>
  new LRUCache<string, CacheEntry>({
    maxSize: maxBytes,
    // lru-cache refuses a size of 0; an empty context still holds its objects.
    sizeCalculation: (entry) => Math.max(1, entry.bytes),
  });

/**
 * Contexts of recently active chats kept parsed: ~5,000 ordinary events (~800 bytes each), the
 * contexts of a hundred and more chats under the default compaction budget of 30 events. More
 * would cost the service its memory target (bench/memory.ts) for little: a chat that fell out is
 * read back in a few milliseconds.
 */
export const DEFAULT_CACHE_BYTES = 4 * 1024 * 1024;
