import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createWorkspaces } from "../../src/scope/workspaces.js";
import { createListFilesTool } from "../../src/tools/list-files.js";
import { createReadFileTool } from "../../src/tools/read-file.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, useTempDir } from "../tools/temp-dir.js";

describe("a workspace that cannot be used", () => {
  const base = useTempDir("workspace-unusable");

  it("tells the model what failed and what to do, never where WORKSPACE_DIR is on the host", async () => {
    // Under a file, as the same code meets a read-only WORKSPACE_DIR (EROFS) or one it may not
    // write (EACCES), each naming the path.
    await writeFile(path.join(base(), "not-a-folder"), "");
    const workspaces = createWorkspaces(path.join(base(), "not-a-folder", "workspace"));
    const tools = createToolRegistry([
      createReadFileTool({ workspaces }),
      createListFilesTool({ workspaces }),
    ]);
    const read = errorOf(await tools.execute("read_file", { path: "a.txt" }, toolContext("5")));
    const list = errorOf(await tools.execute("list_files", {}, toolContext("5")));
    for (const said of [read, list]) {
      expect(said).toContain("this chat's workspace folder cannot be used (ENOTDIR)");
      expect(said).toContain("ask whoever runs the bot to look at WORKSPACE_DIR");
      expect(said).not.toContain(base());
    }
  });
});
