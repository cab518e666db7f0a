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
 * Parsed contexts of recently active chats. Appends go into the cache as they are written, and a
 * load only asks the database which ids are newer than the last one seen (plus the anchor row, to
 * notice a /clear done elsewhere); rows are read and parsed only when another process wrote them.
 * So a turn costs the same whether the context holds 30 events or 10,000.
 */
export class ContextCache {
  private readonly entries = new Map<string, CacheEntry>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(chatId: string): CacheEntry | undefined {
    const entry = this.entries.get(chatId);
    if (entry) {
      this.entries.delete(chatId);
      this.entries.set(chatId, entry);
    }
    return entry;
  }

  set(chatId: string, entry: CacheEntry): void {
    this.delete(chatId);
    this.entries.set(chatId, entry);
    this.bytes += entry.bytes;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes || oldest === chatId) break;
      this.entries.delete(oldest);
      this.bytes -= old.bytes;
    }
  }

  delete(chatId: string): void {
    const entry = this.entries.get(chatId);
    if (!entry) return;
    this.entries.delete(chatId);
    this.bytes -= entry.bytes;
  }
}

/**
 * Contexts of recently active chats kept parsed: ~5,000 ordinary events (~800 bytes each), the
 * contexts of a hundred and more chats under the default compaction budget of 30 events. More
 * would cost the service its memory target (bench/memory.ts) for little: a chat that fell out is
 * read back in a few milliseconds.
 */
export const DEFAULT_CACHE_BYTES = 4 * 1024 * 1024;
