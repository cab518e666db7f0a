import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, rename, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { type Kysely, sql } from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import { functionCallsOf, parseStoredEvent } from "../session/events.js";
import { ensureWorkspace, errorCode } from "../tools/workspace-path.js";
import { scopeName, scopeOfKey } from "./recall-scope.js";
import { freePath, isScoped, SCOPED_MARKER } from "./workspaces.js";

/**
 * Files of the shared workspace that no scope can be shown to own go here, inside WORKSPACE_DIR
 * but outside every scope's folder: no chat's tools reach them, and whoever runs the bot can move
 * them into the right folder by hand.
 */
export const UNATTRIBUTED_DIR = "unattributed";
/** The old top level is gathered here first, then renamed to SORTING in one step. */
const STAGING = ".koroku-staging";
/** Holds what is still to sort; a start that finds it goes on sorting. */
const SORTING = ".koroku-sorting";
const RESERVED = new Set([STAGING, SORTING, SCOPED_MARKER]);
/** Replicas and the terminal chat starting together on one shared workspace take turns. */
const POSTGRES_LOCK_KEY = 4_216_711_532_001;
const BATCH = 500;

const MARKER_TEXT = `Koroku keeps one folder per recall scope here: private-<user id>, group<chat id>, terminal.
${UNATTRIBUTED_DIR}/ holds files from before, when one folder served every chat, that no chat could be shown to own.
This file records that the old files were sorted; do not remove it.
`;

export type SortedWorkspace = {
  /** Files moved into each scope's folder, by the folder's name. */
  byScope: Record<string, number>;
  unattributed: number;
};

type StagedFile = { relPath: string; sha256: string | undefined };

async function sha256Of(file: string): Promise<string | undefined> {
  const hash = createHash("sha256");
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch {
    // Unreadable (or not a file): it can still be attributed by the calls that wrote it.
    return undefined;
  }
  return hash.digest("hex");
}

/** Every file under `dir` (symlinks and other special files too, never followed), as posix paths. */
async function filesUnder(dir: string, prefix = ""): Promise<StagedFile[]> {
  const files: StagedFile[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relPath = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(full, relPath)));
    else files.push({ relPath, sha256: entry.isFile() ? await sha256Of(full) : undefined });
  }
  return files;
}

/** Removes the folders under `dir` that are empty (after the sort, all of them), not `dir`. */
async function removeEmptyFolders(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const inner = path.join(dir, entry.name);
    await removeEmptyFolders(inner);
    await rmdir(inner).catch((error: unknown) => {
      if (errorCode(error) !== "ENOTEMPTY") throw error;
    });
  }
}

/** The scope folder a stored key belongs to; a key no scope has makes the file unattributable. */
function folderOfKey(key: string): string {
  try {
    return scopeName(scopeOfKey(key));
  } catch {
    return UNATTRIBUTED_DIR;
  }
}

/** The workspace path a write_file call named, as the staged files name theirs; else undefined. */
function writtenPath(args: Record<string, unknown> | undefined): string | undefined {
  const written = args?.path;
  if (typeof written !== "string" || path.isAbsolute(written)) return undefined;
  const normalized = path.posix.normalize(written.replaceAll(path.sep, "/"));
  return normalized === "." || normalized.startsWith("../") ? undefined : normalized;
}

/**
 * Which scopes claim each staged file: the conversations that hold its exact bytes (a document
 * the user sent, which the intake saved into inbox/, or a file send_file sent) and those whose
 * model wrote it with write_file.
 */
async function claimsOf(
  db: Kysely<Database>,
  files: readonly StagedFile[],
): Promise<Map<string, Set<string>>> {
  const claims = new Map<string, Set<string>>(files.map((f) => [f.relPath, new Set<string>()]));
  const byHash = new Map<string, string[]>();
  for (const file of files) {
    if (file.sha256 === undefined) continue;
    byHash.set(file.sha256, [...(byHash.get(file.sha256) ?? []), file.relPath]);
  }
  const hashes = [...byHash.keys()];
  for (let i = 0; i < hashes.length; i += BATCH) {
    const uses = await db
      .selectFrom("attachment_uses")
      .select(["chat_id", "sha256"])
      .where("sha256", "in", hashes.slice(i, i + BATCH))
      .execute();
    for (const use of uses) {
      for (const relPath of byHash.get(use.sha256) ?? []) {
        claims.get(relPath)?.add(folderOfKey(use.chat_id));
      }
    }
  }
  let after = 0;
  for (;;) {
    const rows = await db
      .selectFrom("messages")
      .select(["id", "chat_id", "event_json"])
      .where("id", ">", after)
      .where("kind", "=", "session")
      .where("event_json", "like", '%"write_file"%')
      .orderBy("id")
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      const parsed = parseStoredEvent(row.event_json);
      if (!parsed.ok || parsed.event.event_type !== "session") continue;
      for (const call of functionCallsOf(parsed.event)) {
        const written = call.name === "write_file" ? writtenPath(call.args) : undefined;
        if (written !== undefined) claims.get(written)?.add(folderOfKey(row.chat_id));
      }
    }
    if (rows.length < BATCH) return claims;
    after = (rows.at(-1) as { id: number }).id;
  }
}

/** Gathers the old top level into SORTING: entry by entry into STAGING, then one rename. */
async function stage(root: string): Promise<void> {
  const staging = path.join(root, STAGING);
  await mkdir(staging, { recursive: true });
  for (const name of await readdir(root)) {
    if (!RESERVED.has(name)) await rename(path.join(root, name), path.join(staging, name));
  }
  await rename(staging, path.join(root, SORTING));
}

async function sortStaged(root: string, db: Kysely<Database>): Promise<SortedWorkspace> {
  const sorting = path.join(root, SORTING);
  const files = await filesUnder(sorting);
  const claims = await claimsOf(db, files);
  const result: SortedWorkspace = { byScope: {}, unattributed: 0 };
  for (const { relPath } of files) {
    const scopes = [...(claims.get(relPath) ?? [])];
    const folder = scopes.length === 1 ? (scopes[0] as string) : UNATTRIBUTED_DIR;
    const target = await freePath(path.join(root, folder, ...relPath.split("/")));
    await mkdir(path.dirname(target), { recursive: true });
    await rename(path.join(sorting, ...relPath.split("/")), target);
    if (folder === UNATTRIBUTED_DIR) result.unattributed++;
    else result.byScope[folder] = (result.byScope[folder] ?? 0) + 1;
  }
  await removeEmptyFolders(sorting);
  return result;
}

/** A scope's folder as scopeName names it, or the unattributed one. */
const SCOPE_FOLDER = new RegExp(`^(private-\\d+|group-\\d+|terminal|${UNATTRIBUTED_DIR})$`);

/** Whether the top level holds scopes' folders and nothing else (an empty one holds none). */
async function holdsScopeFoldersOnly(root: string): Promise<boolean> {
  const entries = await readdir(root, { withFileTypes: true });
  const found = entries.filter((entry) => !RESERVED.has(entry.name));
  return (
    found.length > 0 && found.every((entry) => entry.isDirectory() && SCOPE_FOLDER.test(entry.name))
  );
}

/** Holds the database's lock for the sort, so two processes never sort one workspace at once. */
function withSortLock<T>(
  db: Kysely<Database>,
  kind: DatabaseKind,
  sort: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  // On SQLite every transaction of ours begins immediate: it holds the file's write lock.
  return db.transaction().execute(async (trx) => {
    if (kind === "postgres")
      await sql`select pg_advisory_xact_lock(${POSTGRES_LOCK_KEY})`.execute(trx);
    return sort(trx);
  });
}

/**
 * Sorts a workspace from before scopes (one folder for every chat) into one folder per recall
 * scope, once: each file goes to the one scope that claims it (see claimsOf), at the same path;
 * a file no scope or several scopes claim goes to UNATTRIBUTED_DIR. Every move is a rename, and
 * the marker is written last, so a start after a crash goes on where the last one stopped. Returns
 * what it moved, or undefined when the workspace was sorted before.
 */
export async function sortWorkspaceIntoScopes(deps: {
  workspaceDir: string;
  db: Kysely<Database>;
  kind: DatabaseKind;
}): Promise<SortedWorkspace | undefined> {
  const root = await ensureWorkspace(deps.workspaceDir);
  // Sorted before: no lock to wait for at every start.
  const sorted = (await isScoped(root))
    ? undefined
    : await withSortLock(deps.db, deps.kind, async (db) => {
        if (await isScoped(root)) return undefined;
        // Sorted before, but its marker lost (a copy that skipped dotfiles, a restore): sorting
        // again would take every chat's folder for old files, and unattribute them all.
        if (await holdsScopeFoldersOnly(root)) {
          await writeFile(path.join(root, SCOPED_MARKER), MARKER_TEXT);
          return undefined;
        }
        if (!(await readdir(root)).includes(SORTING)) await stage(root);
        const result = await sortStaged(root, db);
        await writeFile(path.join(root, SCOPED_MARKER), MARKER_TEXT);
        return result;
      });
  // Only emptied folders are left in it (a crash may have left it behind the marker).
  await rmdir(path.join(root, SORTING)).catch((error: unknown) => {
    if (errorCode(error) !== "ENOENT") throw error;
  });
  return sorted;
}

/** Runs the sort at start-up and says what it did; a failure is logged, and the file tools wait. */
export async function sortWorkspaceAtStart(
  deps: Parameters<typeof sortWorkspaceIntoScopes>[0] & { logger: Logger },
): Promise<void> {
  try {
    const sorted = await sortWorkspaceIntoScopes(deps);
    if (!sorted) return;
    const moved = Object.values(sorted.byScope).reduce((a, b) => a + b, 0);
    if (moved + sorted.unattributed === 0) return;
    deps.logger.info(
      { by_scope: sorted.byScope, unattributed: sorted.unattributed },
      "the workspace's files were sorted into one folder per chat's recall scope",
    );
    if (sorted.unattributed > 0) {
      deps.logger.warn(
        { files: sorted.unattributed, folder: path.join(deps.workspaceDir, UNATTRIBUTED_DIR) },
        "workspace files that no chat could be shown to own were put where no chat sees them; move each into its chat's folder by hand if you know whose it is",
      );
    }
  } catch (error) {
    deps.logger.error(
      { err: error, workspace: deps.workspaceDir },
      "could not sort the workspace into one folder per chat; the file tools refuse to work until a start does: make WORKSPACE_DIR writable by the service and restart",
    );
  }
}
