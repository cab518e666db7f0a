import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/schema.js";

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Where Gemini's Files API holds an attachment, or why it could not take it; or an upload Gemini
 * was still processing, asked after again at `expiresAt`.
 */
export type GeminiFileRef =
  | { kind: "uploaded"; name: string; uri: string; mimeType: string; expiresAt: string }
  | { kind: "processing"; name: string; uri: string; mimeType: string; expiresAt: string }
  | { kind: "failed"; mimeType: string; reason: string; expiresAt: string };

/** The failure a row of an upload still being processed carries beside its name. */
const STILL_PROCESSING = "still processing";

/** The refs of these attachments, by SHA-256; one never uploaded is left out. */
export async function findGeminiFiles(
  db: Db,
  hashes: readonly string[],
): Promise<Map<string, GeminiFileRef>> {
  const found = new Map<string, GeminiFileRef>();
  if (hashes.length === 0) return found;
  const rows = await db
    .selectFrom("gemini_files")
    .select(["sha256", "name", "uri", "mime_type", "expires_at", "failure"])
    .where("sha256", "in", [...new Set(hashes)])
    .execute();
  for (const row of rows) {
    const common = { mimeType: row.mime_type, expiresAt: row.expires_at };
    if (row.name !== null && row.uri !== null && row.failure === null) {
      found.set(row.sha256, { kind: "uploaded", name: row.name, uri: row.uri, ...common });
    } else if (row.name !== null && row.uri !== null && row.failure === STILL_PROCESSING) {
      found.set(row.sha256, { kind: "processing", name: row.name, uri: row.uri, ...common });
    } else {
      found.set(row.sha256, { kind: "failed", reason: row.failure ?? "no uri", ...common });
    }
  }
  return found;
}

/** Records an upload (or its failure); a newer one replaces what another replica stored. */
export async function saveGeminiFile(
  db: Db,
  sha256: string,
  ref: GeminiFileRef,
  now: Date = new Date(),
): Promise<void> {
  const values = {
    name: ref.kind === "failed" ? null : ref.name,
    uri: ref.kind === "failed" ? null : ref.uri,
    mime_type: ref.mimeType,
    expires_at: ref.expiresAt,
    failure:
      ref.kind === "failed" ? ref.reason : ref.kind === "processing" ? STILL_PROCESSING : null,
    created_at: now.toISOString(),
  };
  await db
    .insertInto("gemini_files")
    .values({ sha256, ...values })
    .onConflict((c) => c.column("sha256").doUpdateSet(values))
    .execute();
}

/** Forgets uploads Gemini no longer holds, so that the next request uploads them again. */
export async function forgetGeminiFiles(db: Db, hashes: readonly string[]): Promise<void> {
  if (hashes.length === 0) return;
  await db
    .deleteFrom("gemini_files")
    .where("sha256", "in", [...new Set(hashes)])
    .execute();
}
