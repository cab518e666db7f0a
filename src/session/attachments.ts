import { createHash } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/schema.js";
import { forgetGeminiFiles } from "./gemini-file-refs.js";

type Db = Kysely<Database> | Transaction<Database>;

export type NewAttachment = {
  bytes: Uint8Array;
  mimeType: string;
  fileName?: string;
};

export type StoredAttachment = { sha256: string; mimeType: string; size: number };

export const sha256Hex = (bytes: Uint8Array): string =>
  createHash("sha256").update(bytes).digest("hex");

/**
 * Stores a file for a conversation. Bytes already stored (by any chat) are not written again, and
 * storing the same file twice is harmless: an update that is run again stores it again.
 */
export async function putAttachment(
  db: Db,
  chatId: string,
  file: NewAttachment,
  now: Date = new Date(),
): Promise<StoredAttachment> {
  const sha256 = sha256Hex(file.bytes);
  const createdAt = now.toISOString();
  const size = file.bytes.byteLength;
  await db
    .insertInto("attachments")
    .values({
      sha256,
      mime_type: file.mimeType,
      size,
      data: Buffer.from(file.bytes.buffer, file.bytes.byteOffset, size),
      created_at: createdAt,
    })
    .onConflict((c) => c.column("sha256").doNothing())
    .execute();
  await db
    .insertInto("attachment_uses")
    .values({ chat_id: chatId, sha256, file_name: file.fileName ?? null, created_at: createdAt })
    .onConflict((c) => c.columns(["chat_id", "sha256"]).doNothing())
    .execute();
  return { sha256, mimeType: file.mimeType, size };
}

/** The bytes of these attachments, by SHA-256; one missing (cleared meanwhile) is left out. */
export async function readAttachments(
  db: Db,
  hashes: readonly string[],
): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  if (hashes.length === 0) return found;
  const rows = await db
    .selectFrom("attachments")
    .select(["sha256", "data"])
    .where("sha256", "in", [...new Set(hashes)])
    .execute();
  // Both drivers hand out a Buffer of their own: no copy (they can be 20 MB).
  for (const row of rows) found.set(row.sha256, row.data);
  return found;
}

/**
 * Forgets which attachments this conversation holds, and deletes the bytes no other conversation
 * holds (and the record of their copies in Gemini's Files API). Returns how many files' bytes
 * were deleted.
 */
export async function removeChatAttachments(db: Db, chatId: string): Promise<number> {
  const uses = await db
    .deleteFrom("attachment_uses")
    .where("chat_id", "=", chatId)
    .returning("sha256")
    .execute();
  if (uses.length === 0) return 0;
  const deleted = await db
    .deleteFrom("attachments")
    .where(
      "sha256",
      "in",
      uses.map((u) => u.sha256),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("attachment_uses")
            .select("sha256")
            .whereRef("attachment_uses.sha256", "=", "attachments.sha256"),
        ),
      ),
    )
    .returning("sha256")
    .execute();
  // Gemini deletes its copies within 48 hours; what Koroku knew of them goes with the bytes.
  await forgetGeminiFiles(
    db,
    deleted.map((row) => row.sha256),
  );
  return deleted.length;
}

/** A conversation's attachments follow it to its new key (a group that became a supergroup). */
export async function moveChatAttachments(db: Db, from: string, to: string): Promise<void> {
  // A file both keys hold already stays held once, by the new key.
  await db
    .deleteFrom("attachment_uses")
    .where("chat_id", "=", from)
    .where("sha256", "in", (eb) =>
      eb
        .selectFrom("attachment_uses as other")
        .select("other.sha256")
        .where("other.chat_id", "=", to),
    )
    .execute();
  await db
    .updateTable("attachment_uses")
    .set({ chat_id: to })
    .where("chat_id", "=", from)
    .execute();
}
