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
 * pass `maxBytes`. Appends go into the cache as they are written, and a load only asks the
 * database which ids are newer than the last one seen (plus the anchor row, to notice a /clear
 * done elsewhere); rows are read and parsed only when another process wrote them. So a turn costs
 * the same whether the context holds 30 events or 10,000.
 *
 * A context larger than the whole budget (a chat past what compaction lets a context hold) is kept
 * beside the others, one at a time, the latest such chat set: dropping every other chat for it
 * would make them all load afresh, and not keeping it would read and parse all of it on every
 * turn. Memory stays within the budget plus that one context, which each of its turns holds anyway.
 */
export type ContextCache = {
  get(chatId: string): CacheEntry | undefined;
  set(chatId: string, entry: CacheEntry): void;
  delete(chatId: string): void;
};

export function createContextCache(maxBytes: number): ContextCache {
  // lru-cache refuses a size of 0; an empty context still holds its objects.
  const sizeOf = (entry: CacheEntry) => Math.max(1, entry.bytes);
  const lru = new LRUCache<string, CacheEntry>({ maxSize: maxBytes, sizeCalculation: sizeOf });
  let large: { chatId: string; entry: CacheEntry } | undefined;
  return {
    get: (chatId) => (large?.chatId === chatId ? large.entry : lru.get(chatId)),
    set(chatId, entry) {
      if (sizeOf(entry) > maxBytes) {
        lru.delete(chatId);
        large = { chatId, entry };
        return;
      }
      if (large?.chatId === chatId) large = undefined;
      lru.set(chatId, entry);
    },
    delete(chatId) {
      if (large?.chatId === chatId) large = undefined;
      lru.delete(chatId);
    },
  };
}

/**
 * Contexts of recently active chats kept parsed: ~5,000 ordinary events (~800 bytes each), the
 * contexts of a hundred and more chats under the default compaction budget of 30 events. More
 * would cost the service its memory target (bench/memory.ts) for little: a chat that fell out is
 * read back in a few milliseconds.
 */
export const DEFAULT_CACHE_BYTES = 4 * 1024 * 1024;
