import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseStartScript, START_COMMAND } from "../../bench/service-process.js";
import { REPO_ROOT } from "../helpers/spawn-service.js";

const dockerfile = readFileSync(`${REPO_ROOT}/Dockerfile`, "utf8");

describe("the start command", () => {
  it("reads the environment and node options of a start script", () => {
    expect(parseStartScript("A=1 B_2=x node --one --two=2 scripts/run.mjs dist/main.js")).toEqual({
      env: { A: "1", B_2: "x" },
      nodeArgs: ["--one", "--two=2"],
    });
    expect(parseStartScript("node scripts/run.mjs")).toEqual({ env: {}, nodeArgs: [] });
    expect(parseStartScript("A=1 exec node --one scripts/run.mjs")).toEqual({
      env: { A: "1" },
      nodeArgs: ["--one"],
    });
    expect(() => parseStartScript("cross-env A=1 node x.js")).toThrow(/unexpected "cross-env"/);
    expect(() => parseStartScript("tsx src/main.ts")).toThrow(/does not run node/);
  });

  it("is the same in the Docker image as in npm start", () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd).toBeDefined();
    expect(JSON.parse(cmd as string)).toEqual([
      "node",
      ...START_COMMAND.nodeArgs,
      "dist/src/main.js",
    ]);
    expect(Object.keys(START_COMMAND.env)).not.toHaveLength(0);
    for (const [name, value] of Object.entries(START_COMMAND.env)) {
      expect(dockerfile).toMatch(new RegExp(`^(ENV)?\\s+${name}=${value}\\s`, "m"));
    }
  });

  it("uses only node options this Node accepts", () => {
    const run = spawnSync(process.execPath, [...START_COMMAND.nodeArgs, "-e", "0"], {
      env: { ...process.env, ...START_COMMAND.env },
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(spawnSync(process.execPath, ["--no-such-option", "-e", "0"]).status).not.toBe(0);
  });
});
