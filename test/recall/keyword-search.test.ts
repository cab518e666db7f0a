import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createMigrator, migrateToLatest } from "../../src/db/migrate.js";
import { snippetOf } from "../../src/recall/keyword-search.js";
import { createSessionStore, type SessionStore } from "../../src/session/store.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { said } from "../helpers/events.js";
import { captureLogger } from "../helpers/logs.js";
import { scopeSearch } from "../helpers/search.js";

describe.each(DATABASE_KINDS)("ranked full-text search on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let store: SessionStore;
  let search: ReturnType<typeof scopeSearch>;
  const { logger } = captureLogger();
  let clock = Date.parse("2026-11-01T12:00:00.000Z");
  let seq = 0;
  const newConversation = () => `-100${++seq}:7`;
  /** Appends each text a minute after the one before. */
  const say = async (conversation: string, ...texts: string[]) => {
    for (const text of texts) {
      clock += 60_000;
      await store.append(conversation, [{ event: said(text) }]);
    }
  };
  const found = async (conversation: string, query: string, options = {}) =>
    (await search(conversation, query, { limit: 10, ...options })).map((h) => h.snippet);

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
    store = createSessionStore({ db: handle.db, logger, now: () => new Date(clock) });
    search = scopeSearch(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  it("ranks the exact phrase above the same words scattered, even when those are newer", async () => {
    const c = newConversation();
    await say(c, "we parked the red car by the river", "nothing here", "red paint, and a car");
    await say(c, "a car, then something red", "the car is not blue");
    expect(await found(c, "red car")).toEqual([
      "we parked the red car by the river",
      "a car, then something red",
      "red paint, and a car",
    ]);
  });

  it("puts the newer of equally good matches first", async () => {
    const c = newConversation();
    await say(c, "lunch at noon", "dinner at eight", "lunch at noon");
    const hits = await search(c, "lunch", { limit: 10 });
    expect(hits.map((h) => h.snippet)).toEqual(["lunch at noon", "lunch at noon"]);
    expect((hits[0]?.id as number) > (hits[1]?.id as number)).toBe(true);
  });

  it("takes quoted phrases, prefixes and whole words in any case", async () => {
    const c = newConversation();
    await say(c, "The Zebras crossed", "a zebra crossing", "crossing the zebra");
    expect(await found(c, '"zebra crossing"')).toEqual(["a zebra crossing"]);
    expect(await found(c, "zebra")).toHaveLength(2);
    expect((await found(c, "ZEBR*")).sort()).toEqual(
      ["The Zebras crossed", "a zebra crossing", "crossing the zebra"].sort(),
    );
    expect(await found(c, "zeb")).toEqual([]);
    expect(await found(c, '"zebra cross"*')).toEqual(["a zebra crossing"]);
    expect(await found(c, 'zebra "OR" NEAR( AND -x :')).toEqual([]);
    expect(await found(c, '*** "" ()')).toEqual([]);
  });

  it("filters by since and until", async () => {
    const c = newConversation();
    clock = Date.parse("2026-11-10T08:00:00.000Z");
    await say(c, "invoice one");
    clock = Date.parse("2026-11-20T08:00:00.000Z");
    await say(c, "invoice two");
    clock = Date.parse("2026-11-30T08:00:00.000Z");
    await say(c, "invoice three");
    expect(await found(c, "invoice", { since: "2026-11-15T00:00:00.000Z" })).toEqual([
      "invoice three",
      "invoice two",
    ]);
    expect(
      await found(c, "invoice", {
        since: "2026-11-15T00:00:00.000Z",
        until: "2026-11-25T00:00:00.000Z",
      }),
    ).toEqual(["invoice two"]);
    expect(await found(c, "invoice", { until: "2026-11-01T00:00:00.000Z" })).toEqual([]);
  });

  it("quotes a short snippet around the hit", async () => {
    const c = newConversation();
    const long = `${"filler words go here ".repeat(30)}the passport is in the blue drawer ${"and more text ".repeat(30)}`;
    await say(c, long);
    const [snippet] = await found(c, "passport");
    expect(snippet).toMatch(/^….*the passport is in the blue drawer.*…$/);
    expect(snippet?.length).toBeLessThanOrEqual(202);
  });

  it("searches a chat with its topics, keeps other chats apart, and follows a moved or cleared one", async () => {
    const chat = `-100${++seq}`;
    const topic = `${chat}:3`;
    const other = `-100${++seq}`;
    await say(chat, "general kiwi");
    await say(topic, "topic kiwi");
    await say(other, "other kiwi");
    expect(await found(chat, "kiwi")).toEqual(["topic kiwi", "general kiwi"]);
    expect(await found(topic, "kiwi")).toEqual(["topic kiwi", "general kiwi"]);
    expect(await found(other, "kiwi")).toEqual(["other kiwi"]);
    // A basic group that became a supergroup: its conversation joins the new chat's scope.
    const moved = `-100${++seq}`;
    expect(await store.move(chat, moved)).toBe(1);
    expect(await found(topic, "kiwi")).toEqual(["topic kiwi"]);
    expect(await found(moved, "kiwi")).toEqual(["general kiwi"]);
    await store.clear(topic);
    expect(await found(topic, "kiwi")).toEqual([]);
  });

  it("finds tool arguments and summaries, never searches, across punctuation the same way", async () => {
    const c = newConversation();
    await store.append(c, [
      {
        event: {
          v: 1,
          event_type: "session",
          role: "model",
          parts: [{ kind: "function_call", name: "write_file", args: { path: "notes/zebra.txt" } }],
        },
      },
      {
        event: {
          v: 1,
          event_type: "session",
          role: "model",
          parts: [{ kind: "function_call", name: "search_history", args: { query: "zebra" } }],
        },
      },
    ]);
    await store.appendCompaction(c, {
      event: {
        v: 1,
        event_type: "compaction",
        summary: [{ kind: "text", text: "Mail ann@example.com about the zebra." }],
        summarized_events: 2,
      },
      coversFromId: 1,
      coversToId: 1,
    });
    const hits = await search(c, "zebra", { limit: 10 });
    expect(hits.map((h) => h.role).sort()).toEqual(["model", "summary"]);
    expect(await found(c, "example")).toEqual(["Mail ann@example.com about the zebra."]);
  });
});

describe.each(DATABASE_KINDS)("searching media on %s", (kind) => {
  it("finds a voice note by its transcript and a photo by its caption", async () => {
    const testDb = await createTestDatabase(kind);
    const handle = openDatabase(testDb.target);
    try {
      await migrateToLatest(handle.db, captureLogger().logger);
      const store = createSessionStore({ db: handle.db, logger: captureLogger().logger });
      const search = scopeSearch(handle.db);
      const media = (media: "voice" | "photo", extra: Record<string, unknown>) =>
        ({
          kind: "media",
          media,
          sha256: "a".repeat(64),
          mimeType: media === "voice" ? "audio/ogg" : "image/jpeg",
          size: 1000,
          ...extra,
        }) as const;
      await store.append("-5", [
        {
          event: {
            v: 1,
            event_type: "session",
            role: "user",
            parts: [media("voice", { duration: 4, transcript: "meet me at the harbour at six" })],
          },
        },
        {
          event: {
            v: 1,
            event_type: "session",
            role: "user",
            parts: [media("photo", {}), { kind: "text", text: "the lighthouse at dusk" }],
          },
        },
      ]);
      const [voice] = await search("-5", "harbour", { limit: 5 });
      expect(voice?.snippet).toContain("meet me at the harbour at six");
      const [photo] = await search("-5", '"lighthouse at dusk"', { limit: 5 });
      expect(photo?.snippet).toContain("the lighthouse at dusk");
    } finally {
      await handle.close();
      await testDb.dispose();
    }
  });
});

describe.each(DATABASE_KINDS)("the full-text migration on %s", (kind) => {
  it("indexes the events stored before it", async () => {
    const testDb = await createTestDatabase(kind);
    const handle = openDatabase(testDb.target);
    try {
      const { db } = handle;
      const migrator = await createMigrator(db);
      expect(
        (await migrator.migrateTo("20261202011500_pending_topic_names")).error,
      ).toBeUndefined();
      // As the previous version stored it: search text lower-cased, for LIKE.
      // The table as it was then, without the columns added since.
      await (db as Kysely<Record<string, Record<string, unknown>>>)
        .insertInto("messages")
        .values(
          ["-42", "-42:9"].map((chat) => ({
            chat_id: chat,
            kind: "session" as const,
            role: "user",
            event_json: JSON.stringify(said(`Old Memo for ${chat}`)),
            search_text: `old memo for ${chat}`,
            estimated_tokens: 4,
            prompt_tokens: null,
            update_id: null,
            covers_from_id: null,
            covers_to_id: null,
            created_at: "2026-11-01T00:00:00.000Z",
          })),
        )
        .execute();
      await migrateToLatest(db, captureLogger().logger);
      const search = scopeSearch(db);
      const hits = await search("-42:9", "memo", { limit: 10 });
      expect(hits.map((h) => h.snippet).sort()).toEqual(["old memo for -42", "old memo for -42:9"]);
      expect((await search("-43", '"old memo"', { limit: 10 })).length).toBe(0);
    } finally {
      await handle.close();
      await testDb.dispose();
    }
  });
});

describe("snippets", () => {
  it("start at the text when the hit is near its beginning, and mark only real cuts", () => {
    expect(snippetOf("short text", [{ words: ["text"], prefix: false }])).toBe("short text");
    expect(snippetOf("no hit in here", [{ words: ["zzz"], prefix: false }])).toBe("no hit in here");
  });
});
