import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const REPO_ROOT = join(import.meta.dirname, "../..");

/** A port nobody listens on: it was free a moment ago. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("the tests without PostgreSQL", () => {
  it("fail with one line saying what to start or which variable to set", async () => {
    const url = `postgres://postgres:pw-not-shown@127.0.0.1:${await closedPort()}/test`;
    const run = spawn(
      process.execPath,
      ["node_modules/vitest/vitest.mjs", "run", "test/db/connect.test.ts"],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, TEST_POSTGRES_URL: url, NO_COLOR: "1", FORCE_COLOR: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    run.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    run.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    const code = await new Promise<number | null>((resolve) => run.once("exit", resolve));
    expect(code, output).toBe(1);
    const said = output.split("\n").filter((line) => line.includes("PostgreSQL for the tests"));
    expect(said.length, output).toBeGreaterThan(0);
    expect(said[0]).toMatch(
      /^Error: PostgreSQL for the tests is not reachable at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/test \(ECONNREFUSED\): start one .* or set TEST_POSTGRES_URL/,
    );
    expect(output).not.toContain("pw-not-shown");
    expect(output).not.toContain("TypeError");
    expect(output).not.toMatch(/^Error: connect ECONNREFUSED/m);
    // The SQLite half of the file still ran and passed.
    expect(output).toMatch(
      /Tests: [1-9]\d* passed, 0 failed, \d+ skipped; 1 file\(s\) failed outside their tests/,
    );
  });
});
