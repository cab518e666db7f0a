import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "./registry.js";
import { describeFsError, resolveInWorkspace } from "./workspace-path.js";

export const READ_FILE_MAX_BYTES = 256 * 1024;

const schema = z.object({
  path: z.string().min(1).describe("File path relative to the workspace, e.g. notes/todo.md"),
});

async function readCapped(file: string, relPath: string): Promise<Buffer> {
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer, holding one of
  // the few threads every file access of the process shares. Regular files read as usual.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) {
      throw new Error(`"${relPath}" is a directory; call list_files to see inside it`);
    }
    if (!stats.isFile()) throw new Error(`"${relPath}" is not a regular file`);
    if (stats.size > READ_FILE_MAX_BYTES) {
      throw new Error(
        `"${relPath}" is ${stats.size} bytes; read_file reads at most ${READ_FILE_MAX_BYTES} bytes ` +
          `(${READ_FILE_MAX_BYTES / 1024} KiB)`,
      );
    }
    // A spare byte reveals a file that grew after stat(), which could have passed the cap.
    const buffer = Buffer.alloc(stats.size + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > stats.size) {
      throw new Error(`"${relPath}" grew while it was being read; try again`);
    }
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export function createReadFileTool(deps: { workspaceDir: string }) {
  return defineTool({
    name: "read_file",
    description: `Reads a UTF-8 text file in the workspace (at most ${READ_FILE_MAX_BYTES / 1024} KiB).`,
    schema,
    async run(args) {
      const file = await resolveInWorkspace(deps.workspaceDir, args.path);
      let bytes: Buffer;
      try {
        bytes = await readCapped(file, args.path);
      } catch (error) {
        throw describeFsError(error, args.path);
      }
      if (bytes.includes(0)) {
        throw new Error(
          `"${args.path}" looks binary (it contains NUL bytes); read_file reads text`,
        );
      }
      return { path: args.path, size: bytes.length, content: bytes.toString("utf8") };
    },
  });
}
