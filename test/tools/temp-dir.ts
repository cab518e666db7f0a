import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach } from "vitest";
import type { Workspaces } from "../../src/scope/workspaces.js";
import type { ToolOutcome } from "../../src/tools/registry.js";
import { ensureWorkspace } from "../../src/tools/workspace-path.js";

/** A fresh directory under os.tmpdir() for each test, removed afterwards. */
export function useTempDir(prefix: string): () => string {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), `koroku-${prefix}-`));
  });
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });
  return () => {
    if (dir === undefined) throw new Error("useTempDir: no directory outside a test");
    return dir;
  };
}

export interface WorkspaceDirs {
  base: string;
  /** The workspace the tools are confined to. */
  ws: string;
  /** A sibling the tools must never reach; holds secret.txt. */
  outside: string;
}

/** A workspace next to an "outside" folder, fresh for each test. */
export function useWorkspaceDirs(): () => WorkspaceDirs {
  const base = useTempDir("workspace");
  let dirs: WorkspaceDirs | undefined;
  beforeEach(async () => {
    dirs = { base: base(), ws: path.join(base(), "ws"), outside: path.join(base(), "outside") };
    await mkdir(dirs.ws);
    await mkdir(dirs.outside);
    await writeFile(path.join(dirs.outside, "secret.txt"), "secret");
  });
  return () => {
    if (dirs === undefined) throw new Error("useWorkspaceDirs: no directories outside a test");
    return dirs;
  };
}

/**
 * One folder for every scope: the tests of a tool's confinement to its folder. The scopes'
 * folders are src/scope/workspaces.ts's, tested in test/scope/.
 */
export const oneFolder = (dir: string): Workspaces => ({
  dirOf: () => ensureWorkspace(dir),
  move: async () => 0,
});

/** The outcome's error text; fails the test when the tool succeeded. */
export function errorOf(outcome: ToolOutcome): string {
  if (outcome.ok) throw new Error(`expected an error, got ${JSON.stringify(outcome.response)}`);
  return outcome.response.error;
}

/** The outcome's output; fails the test when the tool answered an error. */
export function outputOf(outcome: ToolOutcome): unknown {
  if (!outcome.ok) throw new Error(`expected an output, got error: ${outcome.response.error}`);
  return outcome.response.output;
}
