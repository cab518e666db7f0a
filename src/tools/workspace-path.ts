import { lstat, mkdir, realpath } from "node:fs/promises";
import path from "node:path";

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  const climbs = relative === ".." || relative.startsWith(`..${path.sep}`);
  return !climbs && !path.isAbsolute(relative);
}

export function errorCode(error: unknown): unknown {
  return error instanceof Error && "code" in error ? error.code : undefined;
}

/** Creates the workspace if missing and returns its real path (it may itself be a symlink). */
export async function ensureWorkspace(workspaceDir: string): Promise<string> {
  await mkdir(workspaceDir, { recursive: true });
  return realpath(workspaceDir);
}

async function exists(candidate: string, relPath: string): Promise<boolean> {
  try {
    await lstat(candidate);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    throw describeFsError(error, relPath);
  }
}

async function realpathOfExisting(candidate: string, relPath: string): Promise<string> {
  try {
    return await realpath(candidate);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ELOOP") {
      throw new Error(
        `path "${relPath}" goes through a broken or looping symlink; ` +
          "use a path whose symlinks point to existing places inside the workspace",
      );
    }
    throw describeFsError(error, relPath);
  }
}

/**
 * Maps a path the model gave (relative to the workspace) to an absolute path inside it.
 * Refuses absolute paths, `..` that climbs above the workspace, and symlinks anywhere on the
 * way that lead outside. Symlinks that stay inside are left in the result, unresolved, so
 * write_file can still see (and refuse) a symlink as the last component.
 */
export async function resolveInWorkspace(workspaceDir: string, relPath: string): Promise<string> {
  if (relPath.includes("\0")) {
    throw new Error("path contains a NUL byte; use a plain relative path such as notes/todo.md");
  }
  if (path.isAbsolute(relPath)) {
    throw new Error(
      `path "${relPath}" is absolute; use a path relative to the workspace such as notes/todo.md`,
    );
  }
  const root = await ensureWorkspace(workspaceDir);
  const target = path.resolve(root, relPath);
  if (!isInside(root, target)) {
    throw new Error(
      `path "${relPath}" leaves the workspace; only files inside the workspace can be used, ` +
        `so remove the ".." that climbs above it`,
    );
  }
  let existing = target;
  while (existing !== root && !(await exists(existing, relPath))) {
    existing = path.dirname(existing);
  }
  if (!isInside(root, await realpathOfExisting(existing, relPath))) {
    throw new Error(
      `path "${relPath}" goes through a symlink that points outside the workspace; ` +
        "only files inside the workspace can be used",
    );
  }
  return target;
}

/** Rewords a file-system error for the model, naming its relative path instead of ours. */
export function describeFsError(error: unknown, relPath: string): Error {
  switch (errorCode(error)) {
    case "ENOENT":
      return new Error(`"${relPath}" does not exist; call list_files to see what is there`);
    case "ENOTDIR":
      return new Error(`a part of "${relPath}" is a file, not a directory`);
    case "EISDIR":
      return new Error(`"${relPath}" is a directory; call list_files to see inside it`);
    case "ELOOP":
      return new Error(`"${relPath}" goes through a symlink loop`);
    case "EACCES":
    case "EPERM":
      return new Error(`permission denied for "${relPath}"`);
    // A socket cannot be opened as a file at all.
    case "ENXIO":
      return new Error(`"${relPath}" is not a regular file`);
    case "ENAMETOOLONG":
      return new Error(`"${relPath}" is too long a path; use shorter names`);
    default: {
      // The system's own message names the absolute path, which is ours, not the model's.
      const code = errorCode(error);
      if (typeof code === "string") return new Error(`could not use "${relPath}" (${code})`);
      return error instanceof Error ? error : new Error(String(error));
    }
  }
}
