import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { scopeKeyOf } from "../../src/recall/area.js";
import type { CompactionEvent, SessionEvent } from "../../src/session/events.js";
import {
  contextTokens,
  createSessionStore,
  EventTooLargeError,
  MAX_EVENT_BYTES,
  type SessionStore,
} from "../../src/session/store.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";
import { scopeSearch } from "../helpers/search.js";

const user = (text: string): SessionEvent => ({
  v: 1,
  event_type: "session",
  role: "user",
  parts: [{ kind: "text", text }],
});
const model = (text: string): SessionEvent => ({
  v: 1,
  event_type: "session",
  role: "model",
  parts: [{ kind: "text", text }],
});
const summaryEvent = (text: string, summarizedEvents: number): CompactionEvent => ({
  v: 1,
  event_type: "compaction",
  summary: [{ kind: "text", text }],
  summarized_events: summarizedEvents,
});
const callEvent = (name: string, args: Record<string, unknown>): SessionEvent => ({
  v: 1,
  event_type: "session",
  role: "model",
  parts: [{ kind: "function_call", name, args, id: "c1", thoughtSignature: "sig==" }],
});
const responseEvent = (name: string, response: Record<string, unknown>): SessionEvent => ({
  v: 1,
  event_type: "session",
  role: "user",
  parts: [{ kind: "function_response", name, response, id: "c1", call: { name, args: {} } }],
});

describe.each(DATABASE_KINDS)("session store on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let store: SessionStore;
  let search: ReturnType<typeof scopeSearch>;
  const { logger, lines } = captureLogger();
  let chatSeq = 0;
  const newChat = () => `chat-${++chatSeq}`;

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
    store = createSessionStore({ db: handle.db, logger });
    search = scopeSearch(handle.db);
  });
  afterAll(async () => {
    // Set up only when the database could be reached.
    await handle?.close();
    await testDb?.dispose();
  });

  it("migrates twice concurrently without error, from two connections", async () => {
    const other = openDatabase(testDb.target);
    try {
      await Promise.all([migrateToLatest(handle.db, logger), migrateToLatest(other.db, logger)]);
      // Both connections see the one schema the race left.
      const tables = await other.db.introspection.getTables();
      expect(tables.map((t) => t.name)).toContain("messages");
    } finally {
      await other.close();
    }
  });

  it("appends events and loads them back in order with their metadata", async () => {
    const chat = newChat();
    await store.append(chat, [{ event: user("hello"), updateId: 42 }]);
    await store.append(chat, [{ event: model("hi there"), promptTokens: 120 }]);
    const context = await store.loadContext(chat);
    expect(context.summary).toBeUndefined();
    expect(context.events.map((e) => e.event)).toEqual([user("hello"), model("hi there")]);
    expect(context.events[0]?.updateId).toBe(42);
    expect(context.events[1]?.promptTokens).toBe(120);
    expect(context.events[0]?.id).toBeLessThan(context.events[1]?.id as number);
  });

  it("refuses an event larger than MAX_EVENT_BYTES and stores nothing of its append", async () => {
    const chat = newChat();
    const huge = callEvent("write_file", { content: "é".repeat(MAX_EVENT_BYTES / 2) });
    await expect(
      store.append(chat, [{ event: user("before") }, { event: huge }]),
    ).rejects.toBeInstanceOf(EventTooLargeError);
    await store.append(chat, [{ event: callEvent("write_file", { content: "é".repeat(1000) }) }]);
    expect((await store.loadContext(chat)).events).toHaveLength(1);
  });

  it("stores a function-call event and its responses in one atomic append", async () => {
    const chat = newChat();
    const stored = await store.append(chat, [
      { event: callEvent("read_file", { path: "a.txt" }) },
      { event: responseEvent("read_file", { output: "x" }), toolCalls: 1 },
    ]);
    expect(stored).toHaveLength(2);
    const bad = { ...responseEvent("x", {}), role: "system" } as unknown as SessionEvent;
    await expect(store.append(chat, [{ event: user("half") }, { event: bad }])).rejects.toThrow();
    const context = await store.loadContext(chat);
    expect(context.events.map((e) => e.event.parts[0]?.kind)).toEqual([
      "function_call",
      "function_response",
    ]);
    expect(context.events[1]?.toolCalls).toBe(1);
  });

  it("loads only the latest compaction and the events after its range", async () => {
    const chat = newChat();
    const first = await store.append(chat, [{ event: user("one") }, { event: model("two") }]);
    const kept = await store.append(chat, [{ event: user("three") }, { event: model("four") }]);
    await store.appendCompaction(chat, {
      event: summaryEvent("old stuff", 2),
      coversFromId: first[0]?.id as number,
      coversToId: first[1]?.id as number,
    });
    await store.append(chat, [{ event: user("five") }]);
    const context = await store.loadContext(chat);
    expect(context.summary?.event.summary[0]?.text).toBe("old stuff");
    expect(context.events.map((e) => e.event)).toEqual([
      user("three"),
      model("four"),
      user("five"),
    ]);
    expect(context.events[0]?.id).toBe(kept[0]?.id);
    // A fresh store (a restart) reads the same context from the database.
    const restarted = createSessionStore({ db: handle.db, logger });
    const reloaded = await restarted.loadContext(chat);
    expect(reloaded.summary?.id).toBe(context.summary?.id);
    expect(reloaded.events.map((e) => e.id)).toEqual(context.events.map((e) => e.id));
  });

  it("sees events appended and chats cleared by another process", async () => {
    const chat = newChat();
    const other = createSessionStore({ db: handle.db, logger });
    await store.append(chat, [{ event: user("a") }]);
    expect((await store.loadContext(chat)).events).toHaveLength(1);
    await other.append(chat, [{ event: model("b") }]);
    expect((await store.loadContext(chat)).events).toHaveLength(2);
    await other.clear(chat);
    await other.append(chat, [{ event: user("fresh") }]);
    expect((await store.loadContext(chat)).events.map((e) => e.event)).toEqual([user("fresh")]);
  });

  it("bounds its cache by the memory contexts hold, not by their number of events", async () => {
    // A row rewritten in place (same id) is invisible to a cached context: it shows which
    // contexts were still cached and which had to be read again.
    const rewrite = async (chatId: string, text: string) => {
      await handle.db
        .updateTable("messages")
        .set({ event_json: JSON.stringify(responseEvent("read_file", { output: text })) })
        .where("chat_id", "=", chatId)
        .execute();
    };
    const loadedText = async (cached: SessionStore, chatId: string) =>
      JSON.stringify((await cached.loadContext(chatId)).events[0]?.event);
    // Each context about 200 KB: two pass a budget of 300 KB, and the first is dropped.
    const bigFile = "x".repeat(100_000);
    for (const [budget, evicted] of [
      [300_000, true],
      [30_000_000, false],
    ] as const) {
      const bounded = createSessionStore({ db: handle.db, logger, cacheBytes: budget });
      const [big, other] = [newChat(), newChat()];
      await bounded.append(big, [{ event: responseEvent("read_file", { output: bigFile }) }]);
      await bounded.loadContext(big);
      await rewrite(big, "read again");
      await bounded.append(other, [{ event: responseEvent("read_file", { output: bigFile }) }]);
      await bounded.loadContext(other);
      expect(await loadedText(bounded, big)).toContain(evicted ? "read again" : bigFile);
    }
  });

  it("merges its own appends with rows another process wrote in between", async () => {
    const chat = newChat();
    const other = createSessionStore({ db: handle.db, logger });
    await store.append(chat, [{ event: user("mine 1") }]);
    await store.loadContext(chat);
    await other.append(chat, [{ event: model("theirs") }]);
    await store.append(chat, [{ event: user("mine 2") }]);
    const texts = (await store.loadContext(chat)).events.map((e) => e.event.parts[0]);
    expect(texts).toEqual([
      { kind: "text", text: "mine 1" },
      { kind: "text", text: "theirs" },
      { kind: "text", text: "mine 2" },
    ]);
    // A compaction written elsewhere cuts the cached context too.
    const ids = (await store.loadContext(chat)).events.map((e) => e.id);
    await other.appendCompaction(chat, {
      event: summaryEvent("s", 2),
      coversFromId: ids[0] as number,
      coversToId: ids[1] as number,
    });
    const after = await store.loadContext(chat);
    expect(after.summary?.event.summary[0]?.text).toBe("s");
    expect(after.events.map((e) => e.id)).toEqual([ids[2]]);
  });

  it("does not let callers see later appends through a context they hold", async () => {
    const chat = newChat();
    await store.append(chat, [{ event: user("one") }]);
    const held = await store.loadContext(chat);
    await store.append(chat, [{ event: model("two") }]);
    expect(held.events).toHaveLength(1);
    expect((await store.loadContext(chat)).events).toHaveLength(2);
  });

  it("keeps chats isolated in context, history and search", async () => {
    // Two users' private chats: two recall scopes.
    const a = "9101";
    const b = "9102";
    await store.append(a, [{ event: user("secret banana plan") }]);
    await store.append(b, [{ event: user("apple") }]);
    expect((await store.loadContext(b)).events.map((e) => e.event)).toEqual([user("apple")]);
    expect(await search(b, "banana", { limit: 10 })).toEqual([]);
    expect((await store.lastTurns(b, 10)).map((e) => e.event)).toEqual([user("apple")]);
    expect((await search(a, "BANANA plan", { limit: 10 })).map((h) => h.snippet)).toEqual([
      "secret banana plan",
    ]);
  });

  it("returns the last n turns, summaries included", async () => {
    const chat = newChat();
    for (let i = 1; i <= 5; i++) {
      await store.append(chat, [{ event: user(`q${i}`) }, { event: model(`a${i}`) }]);
    }
    const turns = await store.lastTurns(chat, 2);
    expect(turns.map((e) => (e.kind === "session" ? e.event.parts[0] : undefined))).toEqual([
      { kind: "text", text: "q4" },
      { kind: "text", text: "a4" },
      { kind: "text", text: "q5" },
      { kind: "text", text: "a5" },
    ]);
    expect(await store.lastTurns(chat, 100)).toHaveLength(10);
  });

  it("searches the whole history including compacted events, tool calls and summaries", async () => {
    const chat = newChat();
    const old = await store.append(chat, [
      { event: user("remember the zebra password") },
      { event: callEvent("write_file", { path: "notes/zebra.txt" }) },
      { event: responseEvent("write_file", { output: "written" }), toolCalls: 1 },
    ]);
    await store.appendCompaction(chat, {
      event: summaryEvent("User talked about a zebra.", 3),
      coversFromId: old[0]?.id as number,
      coversToId: old[2]?.id as number,
    });
    const hits = await search(chat, "zebra", { limit: 10 });
    expect(hits.map((h) => h.role).sort()).toEqual(["model", "summary", "user"]);
    expect(hits.find((h) => h.role === "model")?.snippet).toContain("notes/zebra.txt");
    expect(await search(chat, "zebra 100%", { limit: 10 })).toEqual([]);
    expect(await search(chat, "   ", { limit: 10 })).toEqual([]);
    expect(await search(chat, "zebra", { limit: 1 })).toHaveLength(1);
  });

  it("leaves searches out of what is searched, so a search does not find itself", async () => {
    const chat = newChat();
    await store.append(chat, [{ event: user("my bike is blue") }]);
    await store.append(chat, [{ event: callEvent("search_history", { query: "bike" }) }]);
    await store.append(chat, [
      {
        event: responseEvent("search_history", { matches: [{ text: "my bike is blue" }] }),
        toolCalls: 1,
      },
    ]);
    expect((await search(chat, "bike", { limit: 10 })).map((h) => h.snippet)).toEqual([
      "my bike is blue",
    ]);
  });

  it("clears one chat and reports stats", async () => {
    const chat = newChat();
    await store.append(chat, [
      { event: user("x".repeat(400)) },
      { event: model("ok"), promptTokens: 1000 },
    ]);
    const stats = await store.stats(chat);
    expect(stats).toEqual({ events: 2, tokens: 1001, compactions: 0 });
    expect(await store.clear(chat)).toBe(2);
    expect(await store.stats(chat)).toEqual({ events: 0, tokens: 0, compactions: 0 });
  });

  it("logs and skips a corrupted row instead of failing the chat", async () => {
    const chat = newChat();
    await store.append(chat, [{ event: user("good") }]);
    const { id } = await handle.db
      .insertInto("messages")
      .values({
        chat_id: chat,
        scope: scopeKeyOf(chat),
        kind: "session",
        role: "user",
        event_json: "{not json",
        estimated_tokens: 1,
        search_text: "",
        created_at: new Date().toISOString(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await store.append(chat, [{ event: model("still fine") }]);
    const fresh = createSessionStore({ db: handle.db, logger });
    const context = await fresh.loadContext(chat);
    expect(context.events.map((e) => e.event)).toEqual([user("good"), model("still fine")]);
    expect(lines.some((l) => l.message_id === id && l.msg.includes("fails validation"))).toBe(true);
  });

  it("loads rows stored in the seed's format (schema version 0)", async () => {
    const chat = newChat();
    await handle.db
      .insertInto("messages")
      .values({
        chat_id: chat,
        scope: scopeKeyOf(chat),
        kind: "session",
        role: "model",
        event_json: JSON.stringify({
          role: "model",
          parts: [
            { functionCall: { name: "get_current_time", args: {} }, thoughtSignature: "abc" },
          ],
        }),
        estimated_tokens: 1,
        search_text: "",
        created_at: new Date().toISOString(),
      })
      .execute();
    const context = await createSessionStore({ db: handle.db, logger }).loadContext(chat);
    expect(context.events[0]?.event.parts[0]).toEqual({
      kind: "function_call",
      name: "get_current_time",
      args: {},
      thoughtSignature: "abc",
    });
  });
});

describe("contextTokens", () => {
  const ev = (id: number, est: number, prompt: number | null) => ({
    id,
    kind: "session" as const,
    event: user("x"),
    createdAt: "",
    promptTokens: prompt,
    estimatedTokens: est,
    toolCalls: 0,
    updateId: null,
  });
  it("adds estimates after the latest measurement", () => {
    expect(
      contextTokens({
        summary: undefined,
        events: [ev(1, 10, null), ev(2, 5, 100), ev(3, 7, null)],
      }),
    ).toBe(112);
  });
  it("ignores measurements older than the summary", () => {
    const summary = {
      id: 5,
      kind: "compaction" as const,
      event: {
        v: 1 as const,
        event_type: "compaction" as const,
        summary: [],
        summarized_events: 1,
      },
      createdAt: "",
      coversFromId: 1,
      coversToId: 1,
      estimatedTokens: 20,
    };
    expect(contextTokens({ summary, events: [ev(2, 5, 5000), ev(6, 7, null)] })).toBe(32);
  });
});
