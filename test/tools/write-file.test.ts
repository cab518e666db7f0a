import { lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createToolRegistry } from "../../src/tools/registry.js";
import { createWriteFileTool, WRITE_FILE_MAX_BYTES } from "../../src/tools/write-file.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, oneFolder, outputOf, useWorkspaceDirs } from "./temp-dir.js";

describe("write_file", () => {
  const dirs = useWorkspaceDirs();
  const write = (args: Record<string, unknown>) =>
    createToolRegistry([createWriteFileTool({ workspaces: oneFolder(dirs().ws) })]).execute(
      "write_file",
      args,
      toolContext("1"),
    );

  it("creates parent folders and writes the content", async () => {
    const outcome = await write({ path: "notes/2025/plan.md", content: "héllo" });
    expect(outputOf(outcome)).toEqual({ path: "notes/2025/plan.md", bytes: 6 });
    expect(await readFile(path.join(dirs().ws, "notes/2025/plan.md"), "utf8")).toBe("héllo");
  });

  it("replaces an existing file and leaves no temporary file behind", async () => {
    await write({ path: "a.txt", content: "old" });
    await write({ path: "a.txt", content: "new" });
    expect(await readFile(path.join(dirs().ws, "a.txt"), "utf8")).toBe("new");
    expect(await readdir(dirs().ws)).toEqual(["a.txt"]);
  });

  it("refuses content over 1 MiB and writes nothing", async () => {
    const content = "x".repeat(WRITE_FILE_MAX_BYTES + 1);
    expect(errorOf(await write({ path: "big.txt", content }))).toMatch(
      `content is ${WRITE_FILE_MAX_BYTES + 1} bytes; write_file writes at most ${WRITE_FILE_MAX_BYTES}`,
    );
    expect(await readdir(dirs().ws)).toEqual([]);
    const fits = await write({ path: "fits.txt", content: "x".repeat(WRITE_FILE_MAX_BYTES) });
    expect(outputOf(fits)).toMatchObject({ bytes: WRITE_FILE_MAX_BYTES });
  });

  it.each([
    ["/tmp/evil.txt", /absolute/],
    ["../outside/new.txt", /leaves the workspace/],
    ["../outside/secret.txt", /leaves the workspace/],
  ])("refuses %j", async (relPath, message) => {
    expect(errorOf(await write({ path: relPath, content: "pwned" }))).toMatch(message);
    expect(await readdir(dirs().outside)).toEqual(["secret.txt"]);
    expect(await readFile(path.join(dirs().outside, "secret.txt"), "utf8")).toBe("secret");
  });

  it("refuses to write through a symlinked parent directory that leads outside", async () => {
    await symlink(dirs().outside, path.join(dirs().ws, "out"));
    for (const relPath of ["out/secret.txt", "out/new.txt", "out/deeper/new.txt"]) {
      expect(errorOf(await write({ path: relPath, content: "pwned" }))).toMatch(/symlink/);
    }
    expect(await readdir(dirs().outside)).toEqual(["secret.txt"]);
    expect(await readFile(path.join(dirs().outside, "secret.txt"), "utf8")).toBe("secret");
  });

  it("refuses to write through a symlink, even one pointing inside", async () => {
    const { ws, outside } = dirs();
    await writeFile(path.join(ws, "target.txt"), "original");
    await symlink(path.join(ws, "target.txt"), path.join(ws, "inner-link"));
    await symlink(path.join(outside, "secret.txt"), path.join(ws, "outer-link"));
    await symlink(path.join(outside, "missing.txt"), path.join(ws, "dangling"));
    expect(errorOf(await write({ path: "inner-link", content: "x" }))).toMatch(
      /"inner-link" is a symlink; write_file does not write through symlinks/,
    );
    expect(errorOf(await write({ path: "outer-link", content: "x" }))).toMatch(/outside/);
    expect(errorOf(await write({ path: "dangling", content: "x" }))).toMatch(/broken/);
    expect(await readFile(path.join(ws, "target.txt"), "utf8")).toBe("original");
    expect(await readlink(path.join(ws, "inner-link"))).toBe(path.join(ws, "target.txt"));
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  });

  it("writes a file whose name is near the file system's limit", async () => {
    const name = "y".repeat(240);
    expect(outputOf(await write({ path: name, content: "z" }))).toEqual({ path: name, bytes: 1 });
    expect(await readFile(path.join(dirs().ws, name), "utf8")).toBe("z");
  });

  it("refuses folder paths", async () => {
    await mkdir(path.join(dirs().ws, "dir"));
    for (const relPath of [".", "notes/", "a/.."]) {
      expect(errorOf(await write({ path: relPath, content: "x" }))).toMatch(/names a folder/);
    }
    expect(errorOf(await write({ path: "dir", content: "x" }))).toMatch(/is a directory/);
    expect((await lstat(path.join(dirs().ws, "dir"))).isDirectory()).toBe(true);
  });

  it("names the missing or mistyped field", async () => {
    expect(errorOf(await write({ path: "a.txt" }))).toMatch(/content: .*expected string/);
    expect(errorOf(await write({ path: 1, content: "x" }))).toMatch(/path: .*expected string/);
  });
});
