import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createReadFileTool, READ_FILE_MAX_BYTES } from "../../src/tools/read-file.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, oneFolder, outputOf, useWorkspaceDirs } from "./temp-dir.js";

describe("read_file", () => {
  const dirs = useWorkspaceDirs();
  const read = (relPath: unknown) =>
    createToolRegistry([createReadFileTool({ workspaces: oneFolder(dirs().ws) })]).execute(
      "read_file",
      { path: relPath },
      toolContext("1"),
    );

  it("reads a UTF-8 text file", async () => {
    await mkdir(path.join(dirs().ws, "notes"));
    await writeFile(path.join(dirs().ws, "notes", "a.md"), "héllo\n");
    expect(outputOf(await read("notes/a.md"))).toEqual({
      path: "notes/a.md",
      size: 7,
      content: "héllo\n",
    });
  });

  it("refuses files over the cap and says how big they are", async () => {
    await writeFile(path.join(dirs().ws, "big.txt"), "x".repeat(READ_FILE_MAX_BYTES + 1));
    expect(errorOf(await read("big.txt"))).toBe(
      `"big.txt" is ${READ_FILE_MAX_BYTES + 1} bytes; read_file reads at most ` +
        `${READ_FILE_MAX_BYTES} bytes (256 KiB)`,
    );
    await writeFile(path.join(dirs().ws, "edge.txt"), "x".repeat(READ_FILE_MAX_BYTES));
    expect(outputOf(await read("edge.txt"))).toMatchObject({ size: READ_FILE_MAX_BYTES });
  });

  it("refuses a FIFO at once instead of waiting for a writer", async () => {
    execFileSync("mkfifo", [path.join(dirs().ws, "pipe")]);
    expect(errorOf(await read("pipe"))).toBe('"pipe" is not a regular file');
  });

  it("names a path too long for the file system without revealing where the workspace is", async () => {
    const message = errorOf(await read("x".repeat(300)));
    expect(message).toMatch(/is too long a path; use shorter names$/);
    expect(message).not.toContain(dirs().base);
  });

  it("refuses binary files", async () => {
    await writeFile(path.join(dirs().ws, "img.png"), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    expect(errorOf(await read("img.png"))).toMatch(/binary.*NUL/);
  });

  it("explains missing files and directories", async () => {
    expect(errorOf(await read("nope.txt"))).toBe(
      '"nope.txt" does not exist; call list_files to see what is there',
    );
    await mkdir(path.join(dirs().ws, "dir"));
    expect(errorOf(await read("dir"))).toMatch(/"dir" is a directory; call list_files/);
  });

  it.each([
    ["/etc/passwd", /absolute/],
    ["../outside/secret.txt", /leaves the workspace/],
  ])("refuses %j", async (relPath, message) => {
    expect(errorOf(await read(relPath))).toMatch(message);
  });

  it("refuses a symlink to a file outside and a symlinked parent directory", async () => {
    const { ws, outside } = dirs();
    await symlink(path.join(outside, "secret.txt"), path.join(ws, "link.txt"));
    await symlink(outside, path.join(ws, "out"));
    for (const relPath of ["link.txt", "out/secret.txt"]) {
      const error = errorOf(await read(relPath));
      expect(error).toMatch(/symlink that points outside the workspace/);
      expect(error).not.toContain("secret\n");
    }
  });

  it("follows a symlink that stays inside the workspace", async () => {
    await writeFile(path.join(dirs().ws, "real.txt"), "inside");
    await symlink(path.join(dirs().ws, "real.txt"), path.join(dirs().ws, "alias.txt"));
    expect(outputOf(await read("alias.txt"))).toMatchObject({ content: "inside" });
  });

  it("names the field when the path is missing or not a string", async () => {
    expect(errorOf(await read(undefined))).toMatch(/invalid arguments for read_file: path: /);
    expect(errorOf(await read(7))).toMatch(/path: .*expected string/);
  });
});
