import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MINIMUM_NODE_VERSION, nodeVersionProblem } from "../../src/node-version.js";

const REPO_ROOT = join(import.meta.dirname, "../..");

/** A Node.js older than Koroku needs: the machine's own (CI's is 20, under the Node 24 it brings). */
function olderNode(): string | undefined {
  for (const candidate of [process.env.OLDER_NODE, "/usr/bin/node", "/usr/local/bin/node"]) {
    if (candidate === undefined || !existsSync(candidate)) continue;
    const version = execFileSync(candidate, ["--version"], { encoding: "utf8" }).trim();
    if (nodeVersionProblem(version) !== undefined) return candidate;
  }
  return undefined;
}

describe("the Node.js version", () => {
  it("is the one package.json's engines names", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    expect(pkg.engines.node).toBe(`>=${MINIMUM_NODE_VERSION}`);
  });

  it("is refused below 22.14 with what to install, and accepted from 22.14 on", () => {
    expect(nodeVersionProblem("v20.20.2")).toBe(
      "Koroku needs Node.js 22.14 or newer (24 LTS recommended); this is Node.js v20.20.2. Install a newer Node.js and run npm install again.",
    );
    expect(nodeVersionProblem("v21.7.3")).toContain("needs Node.js 22.14 or newer");
    // Node-API 9: better-sqlite3 13 crashes opening a database there.
    expect(nodeVersionProblem("v22.13.1")).toContain("needs Node.js 22.14 or newer");
    expect(nodeVersionProblem("v22.14.0")).toBeUndefined();
    expect(nodeVersionProblem("v23.0.0")).toBeUndefined();
    expect(nodeVersionProblem("v24.22.3")).toBeUndefined();
    expect(nodeVersionProblem("v100.0.0")).toBeUndefined();
  });

  const older = olderNode();
  it.skipIf(older === undefined)(
    "stops the service and the terminal chat on an older Node in one line on stderr",
    () => {
      for (const entry of ["dist/src/main.js", "dist/src/cli.js"]) {
        const run = spawnSync(older as string, [join(REPO_ROOT, entry)], {
          env: { PATH: process.env.PATH ?? "" },
          encoding: "utf8",
          timeout: 60_000,
        });
        expect(run.status).toBe(1);
        expect(run.stdout).toBe("");
        expect(run.stderr).toMatch(
          /^Koroku needs Node\.js 22\.14 or newer \(24 LTS recommended\); this is Node\.js v\d+\.\d+\.\d+\. Install a newer Node\.js and run npm install again\.\n$/,
        );
      }
    },
  );
});
