import { execFileSync } from "node:child_process";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createListFilesTool, LIST_FILES_MAX_ENTRIES } from "../../src/tools/list-files.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, oneFolder, outputOf, useWorkspaceDirs } from "./temp-dir.js";

describe("list_files", () => {
  const dirs = useWorkspaceDirs();
  const list = (args: Record<string, unknown>) =>
    createToolRegistry([createListFilesTool({ workspaces: oneFolder(dirs().ws) })]).execute(
      "list_files",
      args,
      toolContext("1"),
    );

  it("lists the workspace sorted by name with types and file sizes", async () => {
    const { ws } = dirs();
    await writeFile(path.join(ws, "b.txt"), "12345");
    await mkdir(path.join(ws, "a-dir"));
    await symlink(path.join(ws, "b.txt"), path.join(ws, "c-link"));
    execFileSync("mkfifo", [path.join(ws, "d-pipe")]);
    expect(outputOf(await list({}))).toEqual({
      path: ".",
      entries: [
        { name: "a-dir", type: "dir", size: null },
        { name: "b.txt", type: "file", size: 5 },
        { name: "c-link", type: "symlink", size: null },
        { name: "d-pipe", type: "other", size: null },
      ],
      total: 4,
      truncated: false,
    });
  });

  it("lists a subdirectory", async () => {
    await mkdir(path.join(dirs().ws, "notes"));
    await writeFile(path.join(dirs().ws, "notes", "x.md"), "x");
    expect(outputOf(await list({ path: "notes" }))).toMatchObject({
      path: "notes",
      entries: [{ name: "x.md", type: "file", size: 1 }],
    });
  });

  it("creates a missing workspace and lists it empty", async () => {
    await rm(dirs().ws, { recursive: true });
    expect(outputOf(await list({}))).toMatchObject({ entries: [], truncated: false });
  });

  it(`caps the listing at ${LIST_FILES_MAX_ENTRIES} entries and says so`, async () => {
    const names = Array.from(
      { length: LIST_FILES_MAX_ENTRIES + 2 },
      (_, i) => `f${String(i).padStart(4, "0")}`,
    );
    await Promise.all(names.map((name) => writeFile(path.join(dirs().ws, name), "")));
    const output = outputOf(await list({})) as { entries: { name: string }[] };
    expect(output).toMatchObject({ total: LIST_FILES_MAX_ENTRIES + 2, truncated: true });
    expect(output.entries.map((entry) => entry.name)).toEqual(
      names.slice(0, LIST_FILES_MAX_ENTRIES),
    );
  });

  it("refuses paths outside the workspace, including through symlinks", async () => {
    await symlink(dirs().outside, path.join(dirs().ws, "out"));
    expect(errorOf(await list({ path: ".." }))).toMatch(/leaves the workspace/);
    expect(errorOf(await list({ path: "/etc" }))).toMatch(/absolute/);
    expect(errorOf(await list({ path: "out" }))).toMatch(/symlink that points outside/);
  });

  it("explains a file or missing path", async () => {
    await writeFile(path.join(dirs().ws, "a.txt"), "x");
    expect(errorOf(await list({ path: "a.txt" }))).toMatch(/is a file.*read_file/);
    expect(errorOf(await list({ path: "missing" }))).toMatch(/does not exist/);
  });

  it("names the field when path has the wrong type", async () => {
    expect(errorOf(await list({ path: ["a"] }))).toMatch(/path: .*expected string/);
  });
});
