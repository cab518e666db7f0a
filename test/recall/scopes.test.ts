import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { startFresh } from "../../src/recall/fresh-start.js";
import { createRecall, type Recall } from "../../src/recall/recall.js";
import { scopeOfKey } from "../../src/scope/recall-scope.js";
import { createSessionStore, type SessionStore } from "../../src/session/store.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { said } from "../helpers/events.js";
import { captureLogger } from "../helpers/logs.js";

const USER = 7001;
const OTHER_USER = 7002;
const GROUP = -1007001;

describe.each(DATABASE_KINDS)("recall scopes on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  let store: SessionStore;
  let recall: Recall;
  const { logger } = captureLogger();

  const found = async (conversation: string, query: string) =>
    (
      await recall.search({ chatId: conversation, scope: scopeOfKey(conversation) }, query, {
        limit: 10,
      })
    ).map((h) => h.snippet);

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
    store = createSessionStore({ db: handle.db, logger });
    recall = createRecall({ db: handle.db, loadContext: store.loadContext });
    await store.append(`${USER}:11`, [
      { event: said("the spare key hides under the blue flowerpot") },
      { event: said("Noted: the spare key is under the blue flowerpot.", "model") },
    ]);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  it("finds a fact told in one private topic from another topic of that chat", async () => {
    expect((await found(`${USER}:12`, "flowerpot")).sort()).toEqual([
      "Noted: the spare key is under the blue flowerpot.",
      "the spare key hides under the blue flowerpot",
    ]);
    expect(await found(String(USER), "spare key")).toHaveLength(2);
  });

  it("never answers with what the asking context still holds, the question itself above all", async () => {
    expect(await found(`${USER}:11`, "flowerpot")).toEqual([]);
    await store.append(`${USER}:13`, [{ event: said("where is the flowerpot?") }]);
    expect(await found(`${USER}:13`, "flowerpot")).toHaveLength(2);
    expect(await found(`${USER}:12`, "flowerpot")).toContain("where is the flowerpot?");
  });

  it("finds a conversation's own history again after /new, which keeps it stored", async () => {
    const chat = String(USER);
    await store.append(chat, [{ event: said("my locker code is 4711") }]);
    expect(await found(chat, "locker")).toEqual([]);
    expect(await startFresh(store, chat)).toBe(1);
    const context = await store.loadContext(chat);
    expect(context.events).toEqual([]);
    expect(await found(chat, "locker")).toEqual(["my locker code is 4711"]);
    expect(await found(chat, "flowerpot")).toHaveLength(3);
    // A second /new finds nothing new to leave out: the fresh note alone is covered again.
    expect(await startFresh(store, chat)).toBe(1);
    expect(await found(chat, "locker")).toEqual(["my locker code is 4711"]);
  });

  it("never lets a group, another user or the terminal recall a private fact", async () => {
    await store.append(String(GROUP), [{ event: said("group talk about a flowerpot sale") }]);
    await store.append(`${GROUP}:5`, [{ event: said("what about the flowerpot?") }]);
    for (const asking of [String(GROUP), `${GROUP}:5`, `${GROUP}:6`]) {
      const hits = await found(asking, "flowerpot");
      expect(hits.every((h) => !h.includes("spare key"))).toBe(true);
    }
    expect(await found(`${GROUP}:6`, "flowerpot")).toEqual([
      "what about the flowerpot?",
      "group talk about a flowerpot sale",
    ]);
    expect(await found(String(OTHER_USER), "flowerpot")).toEqual([]);
    expect(await found("local", "flowerpot")).toEqual([]);
    // Nor does a private chat recall the group's.
    expect(await found(`${USER}:12`, "sale")).toEqual([]);
  });
});
