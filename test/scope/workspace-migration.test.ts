import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sortWorkspaceIntoScopes } from "../../src/scope/workspace-migration.js";
import { SCOPED_MARKER } from "../../src/scope/workspaces.js";
import { migratedDatabasePerFile } from "../helpers/migrated-database.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "koroku-workspace-sort-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("sortWorkspaceIntoScopes", () => {
  const db = migratedDatabasePerFile("sqlite");

  it("leaves a workspace sorted before as it is when only its marker was lost (a restore)", async () => {
    await mkdir(path.join(dir, "private-5", "inbox"), { recursive: true });
    await writeFile(path.join(dir, "private-5", "inbox", "passport.pdf"), "%PDF");
    await mkdir(path.join(dir, "group-100"));
    await writeFile(path.join(dir, "group-100", "plan.md"), "plan");
    expect(await sortWorkspaceIntoScopes({ workspaceDir: dir, db: db(), kind: "sqlite" })).toBe(
      undefined,
    );
    expect(existsSync(path.join(dir, "private-5", "inbox", "passport.pdf"))).toBe(true);
    expect(existsSync(path.join(dir, "group-100", "plan.md"))).toBe(true);
    expect(existsSync(path.join(dir, SCOPED_MARKER))).toBe(true);
  });

  it("sorts an old shared workspace, whose files no chat claims, into the unattributed folder", async () => {
    await writeFile(path.join(dir, "notes.md"), "notes");
    expect(await sortWorkspaceIntoScopes({ workspaceDir: dir, db: db(), kind: "sqlite" })).toEqual({
      byScope: {},
      unattributed: 1,
    });
    expect(existsSync(path.join(dir, "unattributed", "notes.md"))).toBe(true);
  });
});
