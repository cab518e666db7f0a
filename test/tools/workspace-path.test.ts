import { mkdir, realpath, symlink } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { resolveInWorkspace } from "../../src/tools/workspace-path.js";
import { useWorkspaceDirs } from "./temp-dir.js";

describe("resolveInWorkspace", () => {
  const dirs = useWorkspaceDirs();
  let base: string;
  let ws: string;
  let outside: string;

  beforeEach(() => {
    ({ base, ws, outside } = dirs());
  });

  it("maps relative paths into the workspace, existing or not", async () => {
    const root = await realpath(ws);
    expect(await resolveInWorkspace(ws, "notes/todo.md")).toBe(path.join(root, "notes/todo.md"));
    expect(await resolveInWorkspace(ws, "a/../b.txt")).toBe(path.join(root, "b.txt"));
    expect(await resolveInWorkspace(ws, ".")).toBe(root);
    expect(await resolveInWorkspace(ws, "")).toBe(root);
    expect(await resolveInWorkspace(ws, "..notes.txt")).toBe(path.join(root, "..notes.txt"));
  });

  it("creates a missing workspace", async () => {
    const fresh = path.join(base, "new", "ws");
    expect(await resolveInWorkspace(fresh, "x")).toBe(path.join(await realpath(fresh), "x"));
  });

  it.each(["..", "../outside/secret.txt", "a/../../outside", "notes/../../x"])(
    "refuses %j, which climbs out",
    async (relPath) => {
      await expect(resolveInWorkspace(ws, relPath)).rejects.toThrow(/leaves the workspace/);
    },
  );

  it.each(["/etc/passwd", "/"])("refuses the absolute path %j", async (relPath) => {
    await expect(resolveInWorkspace(ws, relPath)).rejects.toThrow(/absolute.*relative/);
  });

  it("refuses NUL bytes", async () => {
    await expect(resolveInWorkspace(ws, "a\0b")).rejects.toThrow(/NUL/);
  });

  it("refuses symlinks that lead outside, as the path or as any parent", async () => {
    await symlink(outside, path.join(ws, "out"));
    await symlink(path.join(outside, "secret.txt"), path.join(ws, "secret-link"));
    for (const relPath of ["out", "out/secret.txt", "out/new/file.txt", "secret-link"]) {
      await expect(resolveInWorkspace(ws, relPath)).rejects.toThrow(/symlink .*outside/);
    }
  });

  it("refuses broken symlinks, which could later be made to point anywhere", async () => {
    await symlink(path.join(outside, "missing"), path.join(ws, "dangling"));
    await expect(resolveInWorkspace(ws, "dangling")).rejects.toThrow(/broken or looping/);
    await expect(resolveInWorkspace(ws, "dangling/x")).rejects.toThrow(/broken or looping/);
  });

  it("allows symlinks that stay inside and leaves them unresolved", async () => {
    await mkdir(path.join(ws, "real"));
    await symlink(path.join(ws, "real"), path.join(ws, "alias"));
    expect(await resolveInWorkspace(ws, "alias/file.txt")).toBe(
      path.join(await realpath(ws), "alias/file.txt"),
    );
  });

  it("works when the workspace itself is reached through a symlink", async () => {
    const linkedWs = path.join(base, "ws-link");
    await symlink(ws, linkedWs);
    expect(await resolveInWorkspace(linkedWs, "a.txt")).toBe(
      path.join(await realpath(ws), "a.txt"),
    );
  });
});
