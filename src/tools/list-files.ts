import type { Dirent } from "node:fs";
import { lstat, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { Workspaces } from "../scope/workspaces.js";
import { defineTool } from "./registry.js";
import { describeFsError, resolveInWorkspace } from "./workspace-path.js";

export const LIST_FILES_MAX_ENTRIES = 500;

const schema = z.object({
  path: z
    .string()
    .optional()
    .describe("Directory relative to the workspace; omit it for the workspace itself"),
});

export interface FileEntry {
  name: string;
  /** "other": a FIFO, socket or device, which read_file refuses. */
  type: "file" | "dir" | "symlink" | "other";
  /** Bytes for files; null for directories and symlinks, whose sizes mean nothing to a reader. */
  size: number | null;
}

async function describeEntry(dir: string, entry: Dirent): Promise<FileEntry> {
  if (entry.isSymbolicLink()) return { name: entry.name, type: "symlink", size: null };
  if (entry.isDirectory()) return { name: entry.name, type: "dir", size: null };
  if (!entry.isFile()) return { name: entry.name, type: "other", size: null };
  const stats = await lstat(path.join(dir, entry.name));
  return { name: entry.name, type: "file", size: stats.size };
}

export function createListFilesTool(deps: { workspaces: Workspaces }) {
  return defineTool({
    name: "list_files",
    description:
      "Lists a directory in the workspace: name, type (file, dir, symlink or other) and size in bytes, " +
      `sorted by name, at most ${LIST_FILES_MAX_ENTRIES} entries.`,
    schema,
    async run(args, ctx) {
      const relPath = args.path ?? ".";
      const dir = await resolveInWorkspace(await deps.workspaces.dirOf(ctx.scope), relPath);
      try {
        if (!(await stat(dir)).isDirectory()) {
          throw new Error(`"${relPath}" is a file, not a directory; call read_file to read it`);
        }
        const all = await readdir(dir, { withFileTypes: true });
        all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const shown = all.slice(0, LIST_FILES_MAX_ENTRIES);
        const entries = await Promise.all(shown.map((entry) => describeEntry(dir, entry)));
        return {
          path: relPath,
          entries,
          total: all.length,
          truncated: all.length > LIST_FILES_MAX_ENTRIES,
        };
      } catch (error) {
        throw describeFsError(error, relPath);
      }
    },
  });
}
