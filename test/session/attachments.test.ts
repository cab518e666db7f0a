import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import {
  putAttachment,
  readAttachments,
  removeChatAttachments,
  sha256Hex,
} from "../../src/session/attachments.js";
import { findGeminiFiles, saveGeminiFile } from "../../src/session/gemini-file-refs.js";
import { createSessionStore } from "../../src/session/store.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../helpers/databases.js";
import { captureLogger } from "../helpers/logs.js";

const bytesOf = (seed: number, size = 4096) =>
  Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed) % 256);

describe.each(DATABASE_KINDS)("attachments on %s", (kind) => {
  let testDb: TestDatabase;
  let handle: DatabaseHandle;
  const { logger } = captureLogger();

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    handle = openDatabase(testDb.target);
    await migrateToLatest(handle.db, logger);
  });
  afterAll(async () => {
    await handle.close();
    await testDb.dispose();
  });

  const count = async (table: "attachments" | "attachment_uses") =>
    Number(
      (
        await handle.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it("stores the same bytes once, however often and by whichever chat they are sent", async () => {
    const photo = bytesOf(1);
    const before = await count("attachments");
    const first = await putAttachment(handle.db, "a", { bytes: photo, mimeType: "image/jpeg" });
    const again = await putAttachment(handle.db, "a", { bytes: photo, mimeType: "image/jpeg" });
    await putAttachment(handle.db, "b", {
      bytes: photo,
      mimeType: "image/jpeg",
      fileName: "x.jpg",
    });
    expect(first).toEqual({ sha256: sha256Hex(photo), mimeType: "image/jpeg", size: 4096 });
    expect(again).toEqual(first);
    expect(await count("attachments")).toBe(before + 1);
    const read = await readAttachments(handle.db, [first.sha256, first.sha256, "0".repeat(64)]);
    expect([...read.keys()]).toEqual([first.sha256]);
    expect(Buffer.compare(read.get(first.sha256) as Buffer, Buffer.from(photo))).toBe(0);
  });

  it("keeps every byte value and a 10 MB file intact", async () => {
    const big = Uint8Array.from({ length: 10 * 1024 * 1024 }, (_, i) => (i * 7919) % 256);
    const { sha256 } = await putAttachment(handle.db, "big", {
      bytes: big,
      mimeType: "image/png",
    });
    const back = (await readAttachments(handle.db, [sha256])).get(sha256) as Buffer;
    expect(back.byteLength).toBe(big.byteLength);
    expect(sha256Hex(back)).toBe(sha256);
  });

  it("/clear removes the chat's attachments that no other chat holds, with its events", async () => {
    const store = createSessionStore({ db: handle.db, logger });
    const own = await putAttachment(handle.db, "c", { bytes: bytesOf(2), mimeType: "image/png" });
    const shared = await putAttachment(handle.db, "c", {
      bytes: bytesOf(3),
      mimeType: "audio/ogg",
    });
    await putAttachment(handle.db, "d", { bytes: bytesOf(3), mimeType: "audio/ogg" });
    const uploaded = (sha256: string) => ({
      kind: "uploaded" as const,
      name: `files/${sha256.slice(0, 8)}`,
      uri: `https://gemini/v1beta/files/${sha256.slice(0, 8)}`,
      mimeType: "image/png",
      expiresAt: "2030-01-02T03:04:05.000Z",
    });
    await saveGeminiFile(handle.db, own.sha256, uploaded(own.sha256));
    await saveGeminiFile(handle.db, shared.sha256, uploaded(shared.sha256));
    await store.append("c", [
      {
        event: {
          v: 1,
          event_type: "session",
          role: "user",
          parts: [{ kind: "media", media: "photo", ...own }],
        },
      },
    ]);
    expect(await store.clear("c")).toBe(1);
    const left = await readAttachments(handle.db, [own.sha256, shared.sha256]);
    expect([...left.keys()]).toEqual([shared.sha256]);
    // What Gemini holds of the deleted bytes is forgotten with them; the shared file's stays.
    const refs = await findGeminiFiles(handle.db, [own.sha256, shared.sha256]);
    expect([...refs.keys()]).toEqual([shared.sha256]);
    expect(refs.get(shared.sha256)).toEqual(uploaded(shared.sha256));
    // The other chat's clear then removes the last use, and the bytes with it.
    expect(await removeChatAttachments(handle.db, "d")).toBe(1);
    expect((await readAttachments(handle.db, [shared.sha256])).size).toBe(0);
  });
});
