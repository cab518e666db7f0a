import type { Kysely } from "kysely";
import { precompiled } from "../db/precompiled.js";
import type { Database, MessageRow, NewMessageRow } from "../db/schema.js";
import type { Logger } from "../logger.js";
import { scopeKeyOf } from "../recall/area.js";
import { moveChatAttachments, removeChatAttachments } from "./attachments.js";
import {
  type CacheEntry,
  contextMemory,
  createContextCache,
  DEFAULT_CACHE_BYTES,
  memoryOf,
} from "./context-cache.js";
import { eventText, isEmbedded } from "./event-text.js";
import {
  type CompactionEvent,
  eventSchema,
  isRealUserMessage,
  parseStoredEvent,
  type SessionEvent,
} from "./events.js";

/**
 * The most bytes one stored event may take (its JSON). Every event is loaded with its
 * conversation's context and sent to Gemini again on each turn, so one huge event would slow every
 * later turn, /history and search; 4 MB is far above any honest answer or tool response.
 */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/** An event past MAX_EVENT_BYTES: refused, nothing stored. */
export class EventTooLargeError extends Error {
  constructor(readonly bytes: number) {
    super(`the event is ${bytes} bytes, more than the ${MAX_EVENT_BYTES} a stored event may hold`);
    this.name = "EventTooLargeError";
  }
}

export type StoredSession = {
  id: number;
  kind: "session";
  event: SessionEvent;
  createdAt: string;
  promptTokens: number | null;
  estimatedTokens: number;
  toolCalls: number;
  updateId: number | null;
};

export type StoredCompaction = {
  id: number;
  kind: "compaction";
  event: CompactionEvent;
  createdAt: string;
  coversFromId: number;
  coversToId: number;
  estimatedTokens: number;
};

export type StoredEvent = StoredSession | StoredCompaction;

/** What the model sees: the latest summary (if any) and every event after the range it covers. */
export type ChatContext = {
  summary: StoredCompaction | undefined;
  events: readonly StoredSession[];
};

export type NewSessionEvent = {
  event: SessionEvent;
  /** usageMetadata.promptTokenCount of the request that produced this model event. */
  promptTokens?: number;
  /** Tool calls really executed for this function-response event (not budget refusals). */
  toolCalls?: number;
  updateId?: number;
};

export type NewCompaction = {
  event: CompactionEvent;
  coversFromId: number;
  coversToId: number;
};

export type ChatStats = { events: number; tokens: number; compactions: number };

export type SessionStore = ReturnType<typeof createSessionStore>;

/** What loading needs of a row: everything but the search text, which can be large. */
const CONTEXT_COLUMNS = [
  "id",
  "chat_id",
  "kind",
  "event_json",
  "prompt_tokens",
  "estimated_tokens",
  "tool_calls",
  "update_id",
  "covers_from_id",
  "covers_to_id",
  "created_at",
] as const;
type ContextRow = Pick<MessageRow, (typeof CONTEXT_COLUMNS)[number]>;

/** A session event's row as it is stored: every column given, none left to its default. */
type EventRow = Required<
  Omit<NewMessageRow, "id" | "covers_from_id" | "covers_to_id" | "forgotten_at">
>;

/**
 * Prompt tokens of the context: the latest size Gemini measured for it, plus an estimate for what
 * was added since. A measurement taken before the latest compaction counted the summarised
 * events too, so only measurements newer than the summary are trusted.
 */
export function contextTokens(context: ChatContext): number {
  const { summary, events } = context;
  let estimate = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as StoredSession;
    estimate += e.estimatedTokens;
    if (e.promptTokens !== null && e.id > (summary?.id ?? 0)) return e.promptTokens + estimate;
  }
  return estimate + (summary?.estimatedTokens ?? 0);
}

/** What the compaction budgets measure: events in the context (the summary counts as one) and tokens. */
export function contextSize(context: ChatContext): { events: number; tokens: number } {
  return {
    events: context.events.length + (context.summary ? 1 : 0),
    tokens: contextTokens(context),
  };
}

/** The context after events were stored at its end. */
export function withAppended(context: ChatContext, stored: readonly StoredSession[]): ChatContext {
  return { summary: context.summary, events: [...context.events, ...stored] };
}

export function createSessionStore(deps: {
  db: Kysely<Database>;
  logger: Logger;
  now?: () => Date;
  /** Memory for parsed contexts across chats, estimated; least recently used chats are dropped. */
  cacheBytes?: number;
}) {
  const { db, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const cache = createContextCache(deps.cacheBytes ?? DEFAULT_CACHE_BYTES);

  function toStored(row: ContextRow): StoredEvent | undefined {
    const parsed = parseStoredEvent(row.event_json);
    const mismatch =
      parsed.ok && (parsed.event.event_type === "compaction") !== (row.kind === "compaction");
    if (!parsed.ok || mismatch) {
      logger.warn(
        {
          chat_id: row.chat_id,
          message_id: row.id,
          problem: parsed.ok ? "kind mismatch" : parsed.error,
        },
        "skipping a stored event that fails validation",
      );
      return undefined;
    }
    if (parsed.event.event_type === "compaction") {
      return {
        id: row.id,
        kind: "compaction",
        event: parsed.event,
        createdAt: row.created_at,
        coversFromId: row.covers_from_id ?? 0,
        coversToId: row.covers_to_id ?? 0,
        estimatedTokens: row.estimated_tokens,
      };
    }
    return {
      id: row.id,
      kind: "session",
      event: parsed.event,
      createdAt: row.created_at,
      promptTokens: row.prompt_tokens,
      estimatedTokens: row.estimated_tokens,
      toolCalls: row.tool_calls,
      updateId: row.update_id,
    };
  }

  function rowFor(
    chatId: string,
    body: SessionEvent | CompactionEvent,
  ): Omit<EventRow, "prompt_tokens" | "tool_calls" | "update_id"> {
    const event = eventSchema.parse(body);
    const json = JSON.stringify(event);
    const bytes = Buffer.byteLength(json);
    if (bytes > MAX_EVENT_BYTES) throw new EventTooLargeError(bytes);
    const text = eventText(event);
    return {
      chat_id: chatId,
      scope: scopeKeyOf(chatId),
      kind: event.event_type === "compaction" ? "compaction" : "session",
      role: event.event_type === "session" ? event.role : null,
      event_json: json,
      is_user_message: event.event_type === "session" && isRealUserMessage(event) ? 1 : 0,
      estimated_tokens: text.estimatedTokens,
      search_text: text.searchText,
      created_at: now().toISOString(),
    };
  }

  // The statements of every turn, compiled once (src/db/precompiled.ts).
  // Two index probes in one round trip: ids newer than the last one seen, and the anchor row.
  const probeIds = precompiled(db, (a: { chatId: string; lastId: number; anchor: number }) =>
    db
      .selectFrom("messages")
      .select("id")
      .where("chat_id", "=", a.chatId)
      .where("id", ">", a.lastId)
      .unionAll(
        db
          .selectFrom("messages")
          .select("id")
          .where("id", "=", a.anchor)
          .where("chat_id", "=", a.chatId),
      ),
  );
  const latestCompactions = precompiled(db, (a: { chatId: string }) =>
    db
      .selectFrom("messages")
      .select(CONTEXT_COLUMNS)
      .where("chat_id", "=", a.chatId)
      .where("kind", "=", "compaction")
      .orderBy("id", "desc")
      .limit(3),
  );
  const eventsAfter = precompiled(db, (a: { chatId: string; after: number }) =>
    db
      .selectFrom("messages")
      .select(CONTEXT_COLUMNS)
      .where("chat_id", "=", a.chatId)
      .where("kind", "=", "session")
      .where("id", ">", a.after)
      .orderBy("id"),
  );
  const insertEvent = precompiled(db, (a: EventRow) =>
    db
      .insertInto("messages")
      .values({
        chat_id: a.chat_id,
        scope: a.scope,
        kind: a.kind,
        role: a.role,
        event_json: a.event_json,
        is_user_message: a.is_user_message,
        estimated_tokens: a.estimated_tokens,
        search_text: a.search_text,
        created_at: a.created_at,
        prompt_tokens: a.prompt_tokens,
        tool_calls: a.tool_calls,
        update_id: a.update_id,
      })
      .returning("id"),
  );

  async function loadFromScratch(chatId: string): Promise<CacheEntry> {
    const { rows: compactions } = await latestCompactions.run({ chatId });
    let summary: StoredCompaction | undefined;
    for (const row of compactions) {
      const stored = toStored(row);
      if (stored?.kind === "compaction") {
        summary = stored;
        break;
      }
    }
    const { rows } = await eventsAfter.run({ chatId, after: summary?.coversToId ?? 0 });
    const events: StoredSession[] = [];
    for (const row of rows) {
      const stored = toStored(row);
      if (stored?.kind === "session") events.push(stored);
    }
    const lastId = Math.max(summary?.id ?? 0, rows.at(-1)?.id ?? 0);
    return { summary, events, lastId, own: new Set(), bytes: contextMemory({ summary, events }) };
  }

  /** Applies rows (in id order) on top of a context: events extend it, a compaction cuts it. */
  function applyRows(base: ChatContext, rows: readonly ContextRow[]): ChatContext {
    let { summary } = base;
    let events = base.events;
    const fresh: StoredSession[] = [];
    for (const row of rows) {
      const stored = toStored(row);
      if (stored?.kind === "compaction") {
        summary = stored;
        events = [...events, ...fresh.splice(0)].filter((e) => e.id > stored.coversToId);
      } else if (stored) {
        fresh.push(stored);
      }
    }
    return { summary, events: fresh.length > 0 ? [...events, ...fresh] : events };
  }

  /** Brings a cached context up to date; undefined when it must be loaded from scratch. */
  async function refresh(chatId: string, cached: CacheEntry): Promise<CacheEntry | undefined> {
    const anchor = cached.summary?.id ?? cached.events[0]?.id;
    // Without an anchor (an empty chat) the anchor probe finds nothing and is harmless.
    const probed = await probeIds.run({ chatId, lastId: cached.lastId, anchor: anchor ?? 0 });
    const ids = probed.rows.map((r) => r.id);
    if (anchor !== undefined && !ids.includes(anchor)) return undefined;
    const newer = ids.filter((id) => id > cached.lastId);
    if (newer.length === 0) return cached;
    const lastId = Math.max(...newer);
    if (newer.every((id) => cached.own.has(id))) return { ...cached, lastId, own: new Set() };
    // Another process wrote to this chat: read what we don't hold, on top of what was seen.
    const rows = await db
      .selectFrom("messages")
      .select(CONTEXT_COLUMNS)
      .where("chat_id", "=", chatId)
      .where("id", ">", cached.lastId)
      .orderBy("id")
      .execute();
    const seen = {
      summary: cached.summary && cached.summary.id <= cached.lastId ? cached.summary : undefined,
      events: cached.events.filter((e) => e.id <= cached.lastId),
    };
    if (cached.summary && !seen.summary) return undefined;
    const context = applyRows(seen, rows);
    return {
      ...context,
      lastId: Math.max(lastId, rows.at(-1)?.id ?? 0),
      own: new Set(),
      bytes: contextMemory(context),
    };
  }

  async function loadContext(chatId: string): Promise<ChatContext> {
    const cached = cache.get(chatId);
    const entry = (cached && (await refresh(chatId, cached))) ?? (await loadFromScratch(chatId));
    if (entry !== cached) cache.set(chatId, entry);
    return { summary: entry.summary, events: entry.events };
  }

  /** Puts what this process just wrote into the cached context, if the chat is cached. */
  function remember(
    chatId: string,
    update: (entry: CacheEntry) => ChatContext & { bytes: number },
    ids: readonly number[],
  ): void {
    const entry = cache.get(chatId);
    if (!entry) return;
    cache.set(chatId, {
      ...update(entry),
      lastId: entry.lastId,
      own: new Set([...entry.own, ...ids]),
    });
  }

  async function append(
    chatId: string,
    items: readonly NewSessionEvent[],
  ): Promise<StoredSession[]> {
    if (items.length === 0) return [];
    const rows = items.map(
      (item): EventRow => ({
        ...rowFor(chatId, item.event),
        prompt_tokens: item.promptTokens ?? null,
        tool_calls: item.toolCalls ?? 0,
        update_id: item.updateId ?? null,
      }),
    );
    // One multi-row INSERT is atomic on both databases: several events are stored together or not
    // at all. A single event, most of them, needs no statement built for it.
    const [row] = rows;
    const inserted =
      rows.length === 1 && row !== undefined
        ? (await insertEvent.run(row)).rows
        : await db.insertInto("messages").values(rows).returning("id").execute();
    const ids = inserted.map((r) => r.id).sort((a, b) => a - b);
    const stored = items.map(
      (item, i): StoredSession => ({
        id: ids[i] as number,
        kind: "session",
        event: item.event,
        createdAt: rows[i]?.created_at as string,
        promptTokens: item.promptTokens ?? null,
        estimatedTokens: rows[i]?.estimated_tokens as number,
        toolCalls: item.toolCalls ?? 0,
        updateId: item.updateId ?? null,
      }),
    );
    remember(
      chatId,
      (entry) => ({ ...withAppended(entry, stored), bytes: entry.bytes + memoryOf(stored) }),
      ids,
    );
    return stored;
  }

  async function appendCompaction(
    chatId: string,
    compaction: NewCompaction,
  ): Promise<StoredCompaction> {
    const row = {
      ...rowFor(chatId, compaction.event),
      covers_from_id: compaction.coversFromId,
      covers_to_id: compaction.coversToId,
    };
    const { id } = await db
      .insertInto("messages")
      .values(row)
      .returning("id")
      .executeTakeFirstOrThrow();
    const stored: StoredCompaction = {
      id,
      kind: "compaction",
      event: compaction.event,
      createdAt: row.created_at,
      coversFromId: compaction.coversFromId,
      coversToId: compaction.coversToId,
      estimatedTokens: row.estimated_tokens as number,
    };
    remember(
      chatId,
      (entry) => {
        const context = {
          summary: stored,
          events: entry.events.filter((e) => e.id > compaction.coversToId),
        };
        return { ...context, bytes: contextMemory(context) };
      },
      [id],
    );
    return stored;
  }

  /** The last `turns` turns (a turn starts at a message the user typed), summaries included. */
  async function lastTurns(chatId: string, turns: number): Promise<StoredEvent[]> {
    const start = await db
      .selectFrom("messages")
      .select("id")
      .where("chat_id", "=", chatId)
      .where("is_user_message", "=", 1)
      .orderBy("id", "desc")
      .offset(Math.max(0, turns - 1))
      .limit(1)
      .executeTakeFirst();
    const rows = await db
      .selectFrom("messages")
      .select(CONTEXT_COLUMNS)
      .where("chat_id", "=", chatId)
      .where("id", ">=", start?.id ?? 0)
      .orderBy("id")
      .execute();
    return rows.map(toStored).filter((e): e is StoredEvent => e !== undefined);
  }

  /** Deletes the chat's events, and its attachments that no other chat holds, together. */
  async function clear(chatId: string): Promise<number> {
    const deleted = await db.transaction().execute(async (trx) => {
      // What recall derived from the events goes with them (src/recall/).
      const ids = trx.selectFrom("messages").select("id").where("chat_id", "=", chatId);
      await trx.deleteFrom("embeddings").where("message_id", "in", ids).execute();
      await trx.deleteFrom("embedding_queue").where("message_id", "in", ids).execute();
      const result = await trx
        .deleteFrom("messages")
        .where("chat_id", "=", chatId)
        .executeTakeFirst();
      await removeChatAttachments(trx, chatId);
      return Number(result.numDeletedRows);
    });
    cache.delete(chatId);
    return deleted;
  }

  /** Gives every stored event of one conversation to another; returns how many moved. */
  async function move(from: string, to: string): Promise<number> {
    const result = await db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable("messages")
        .set({ chat_id: to, scope: scopeKeyOf(to) })
        .where("chat_id", "=", from)
        .executeTakeFirst();
      await moveChatAttachments(trx, from, to);
      return moved;
    });
    cache.delete(from);
    cache.delete(to);
    return Number(result.numUpdatedRows);
  }

  /**
   * Rewrites a stored session event in place (a transcript added to its media part): its text
   * for search and its token estimate follow. Returns false when the event is gone (cleared).
   */
  async function rewrite(chatId: string, id: number, event: SessionEvent): Promise<boolean> {
    const row = rowFor(chatId, event);
    const rewritten = await db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable("messages")
        .set({
          event_json: row.event_json,
          search_text: row.search_text,
          estimated_tokens: row.estimated_tokens,
        })
        .where("id", "=", id)
        .where("chat_id", "=", chatId)
        .where("kind", "=", "session")
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return false;
      // Recall by meaning held the old text (a voice note without its words): the event is
      // queued again, taking back the claim of a batch holding it, whose vectors are then not
      // stored (src/recall/embedding-queue.ts, complete); and the old vectors go. In this order:
      // on PostgreSQL the queue's row waits for such a batch to commit, so the delete after it
      // sees what the batch stored.
      if (isEmbedded(row)) {
        await trx
          .insertInto("embedding_queue")
          .values({ message_id: id })
          .onConflict((oc) =>
            oc
              .column("message_id")
              .doUpdateSet({ claimed_by: null, lease_until: null, attempts: 0 }),
          )
          .execute();
      }
      await trx.deleteFrom("embeddings").where("message_id", "=", id).execute();
      return true;
    });
    // The cache never sees a row change in place: this chat is read afresh next time.
    cache.delete(chatId);
    return rewritten;
  }

  /** Which of the chat's events `ids` were hidden by /forget (src/recall/forgetting.ts). */
  async function forgottenAmong(chatId: string, ids: readonly number[]): Promise<Set<number>> {
    const forgotten = new Set<number>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await db
        .selectFrom("messages")
        .select("id")
        .where("chat_id", "=", chatId)
        .where("id", "in", ids.slice(i, i + 500))
        .where("forgotten_at", "is not", null)
        .execute();
      for (const row of rows) forgotten.add(row.id);
    }
    return forgotten;
  }

  async function stats(chatId: string): Promise<ChatStats> {
    const context = await loadContext(chatId);
    const { compactions } = await db
      .selectFrom("messages")
      .select((eb) => eb.fn.countAll<number>().as("compactions"))
      .where("chat_id", "=", chatId)
      .where("kind", "=", "compaction")
      .executeTakeFirstOrThrow();
    return { ...contextSize(context), compactions: Number(compactions) };
  }

  return {
    loadContext,
    append,
    appendCompaction,
    lastTurns,
    clear,
    move,
    rewrite,
    forgottenAmong,
    stats,
  };
}
