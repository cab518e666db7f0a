import { z } from "zod";
import type { Workspaces } from "../scope/workspaces.js";
import { readCapped } from "./read-capped.js";
import { defineTool } from "./registry.js";
import { describeFsError, resolveInWorkspace } from "./workspace-path.js";

export const READ_FILE_MAX_BYTES = 256 * 1024;

const schema = z.object({
  path: z.string().min(1).describe("File path relative to the workspace, e.g. notes/todo.md"),
});

export function createReadFileTool(deps: { workspaces: Workspaces }) {
  return defineTool({
    name: "read_file",
    description: `Reads a UTF-8 text file in the workspace (at most ${READ_FILE_MAX_BYTES / 1024} KiB).`,
    schema,
    async run(args, ctx) {
      const file = await resolveInWorkspace(await deps.workspaces.dirOf(ctx.scope), args.path);
      let bytes: Buffer;
      try {
        bytes = await readCapped(
          file,
          args.path,
          READ_FILE_MAX_BYTES,
          (size) =>
            `"${args.path}" is ${size} bytes; read_file reads at most ${READ_FILE_MAX_BYTES} bytes ` +
            `(${READ_FILE_MAX_BYTES / 1024} KiB)`,
        );
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
