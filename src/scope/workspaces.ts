import { lstat, mkdir, readdir, rename, rmdir } from "node:fs/promises";
import path from "node:path";
import { ensureWorkspace, errorCode } from "../tools/workspace-path.js";
import { type RecallScope, scopeName } from "./recall-scope.js";

/**
 * Written into WORKSPACE_DIR once its files are sorted into one folder per scope
 * (src/scope/workspace-migration.ts). Until it is there no scope's folder is made, so a move cut
 * short can tell the files it still has to sort from the folders it made.
 */
export const SCOPED_MARKER = ".koroku-scopes";

/** WORKSPACE_DIR as the file tools see it: one folder per recall scope. */
export type Workspaces = {
  /**
   * The real path of the scope's folder, made when missing; the file tools and the document
   * intake work inside it and nowhere else.
   */
  dirOf(scope: RecallScope): Promise<string>;
  /**
   * Moves one scope's files into another's folder (a group that became a supergroup: its scope's
   * folder is named after the chat id, which changed). Returns the files moved.
   */
  move(from: RecallScope, to: RecallScope): Promise<number>;
};

async function isPresent(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}

export const isScoped = (workspaceRoot: string) =>
  isPresent(path.join(workspaceRoot, SCOPED_MARKER));

/** A file system error of the workspace itself, said without its path (kept as the cause). */
const unusable = (error: unknown) =>
  new Error(
    `this chat's workspace folder cannot be used (${String(errorCode(error) ?? "unknown error")}); ` +
      "ask whoever runs the bot to look at WORKSPACE_DIR",
    { cause: error },
  );

export function createWorkspaces(workspaceDir: string): Workspaces {
  return {
    async move(from, to) {
      const root = await ensureWorkspace(workspaceDir);
      const source = path.join(root, scopeName(from));
      const stats = await lstat(source).catch((error: unknown) => {
        if (errorCode(error) === "ENOENT") return undefined;
        throw error;
      });
      if (!stats?.isDirectory()) return 0;
      return moveTree(source, path.join(root, scopeName(to)));
    },
    async dirOf(scope) {
      // The model, and the chat, read what failed, but not where: the host's paths stay here.
      const root = await ensureWorkspace(workspaceDir).catch((error: unknown) => {
        throw unusable(error);
      });
      if (!(await isScoped(root))) {
        throw new Error(
          "the workspace is not ready: its files have not been sorted into one folder per chat yet " +
            "(the service's log at start-up says why); try again after the service restarted",
        );
      }
      const dir = path.join(root, scopeName(scope));
      await mkdir(dir).catch((error: unknown) => {
        if (errorCode(error) !== "EEXIST") throw unusable(error);
      });
      // A symlink put in a scope's place would lead its tools into another scope or anywhere.
      const stats = await lstat(dir).catch((error: unknown) => {
        throw unusable(error);
      });
      if (stats.isSymbolicLink() || !stats.isDirectory()) {
        throw new Error(
          "this chat's workspace folder is not a plain folder, so the file tools refuse it; " +
            "ask whoever runs the bot to look at WORKSPACE_DIR",
        );
      }
      return dir;
    },
  };
}

/** A path near `target` that nothing holds yet: "a.pdf", else "a-2.pdf", "a-3.pdf", … */
export async function freePath(target: string): Promise<string> {
  const ext = path.extname(target);
  const stem = target.slice(0, target.length - ext.length);
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? target : `${stem}-${n}${ext}`;
    if (!(await isPresent(candidate))) return candidate;
  }
}

/**
 * Moves everything under `from` to the same place under `to`, never replacing what `to` holds (a
 * name taken there gets a number), and removes the folders it emptied. Returns the files moved.
 * Each file moves by one rename: one cut short is either here or there, never half.
 */
export async function moveTree(from: string, to: string): Promise<number> {
  let moved = 0;
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory() && !entry.isSymbolicLink()) {
      moved += await moveTree(source, target);
      continue;
    }
    await mkdir(to, { recursive: true });
    await rename(source, await freePath(target));
    moved++;
  }
  await rmdir(from);
  return moved;
}
