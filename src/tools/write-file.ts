import { randomUUID } from "node:crypto";
import { lstat, mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { Workspaces } from "../scope/workspaces.js";
import { defineTool } from "./registry.js";
import { describeFsError, errorCode, resolveInWorkspace } from "./workspace-path.js";

export const WRITE_FILE_MAX_BYTES = 1024 * 1024;

const schema = z.object({
  path: z.string().min(1).describe("File path relative to the workspace, e.g. notes/todo.md"),
  content: z.string().describe("The whole new content of the file (UTF-8 text)"),
});

async function assertWritableTarget(file: string, relPath: string): Promise<void> {
  try {
    const stats = await lstat(file);
    if (stats.isSymbolicLink()) {
      throw new Error(`"${relPath}" is a symlink; write_file does not write through symlinks`);
    }
    if (stats.isDirectory()) throw new Error(`"${relPath}" is a directory, not a file`);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

/** Readers see the old content or the new, never half a file. */
async function writeAtomically(file: string, content: string): Promise<void> {
  // Short: a name near the file system's limit must still leave room for the temporary one.
  const temp = path.join(path.dirname(file), `.${randomUUID()}.tmp`);
  try {
    // "wx" fails instead of following anything already at the temp path.
    await writeFile(temp, content, { encoding: "utf8", flag: "wx" });
    // rename replaces a symlink itself, never its target.
    await rename(temp, file);
  } catch (error) {
    // The error that matters is the write's, not a failed clean-up's.
    await rm(temp, { force: true }).catch(() => {});
    throw error;
  }
}

export function createWriteFileTool(deps: { workspaces: Workspaces }) {
  return defineTool({
    name: "write_file",
    maxConcurrent: 1,
    description:
      "Creates or replaces a text file in the workspace with the given content " +
      `(at most ${WRITE_FILE_MAX_BYTES / 1024} KiB); missing folders are created.`,
    schema,
    async run(args, ctx) {
      const bytes = Buffer.byteLength(args.content, "utf8");
      if (bytes > WRITE_FILE_MAX_BYTES) {
        throw new Error(
          `content is ${bytes} bytes; write_file writes at most ${WRITE_FILE_MAX_BYTES} bytes ` +
            `(${WRITE_FILE_MAX_BYTES / 1024} KiB), so split it into several files`,
        );
      }
      const normalized = path.normalize(args.path);
      if (normalized === "." || normalized.endsWith(path.sep)) {
        throw new Error(`path "${args.path}" names a folder; give a file name such as notes.md`);
      }
      const file = await resolveInWorkspace(await deps.workspaces.dirOf(ctx.scope), args.path);
      try {
        await assertWritableTarget(file, args.path);
        await mkdir(path.dirname(file), { recursive: true });
        await writeAtomically(file, args.content);
      } catch (error) {
        throw describeFsError(error, args.path);
      }
      return { path: args.path, bytes };
    },
  });
}
