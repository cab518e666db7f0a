import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inspectorArgs, parseHeapProfileKind, startHeapProfile } from "../../bench/heap-profile.js";
import { freePort } from "../helpers/spawn-service.js";

describe("BENCH_HEAP_PROFILE", () => {
  it("samples every allocation unless told to keep only what was promoted", () => {
    expect(parseHeapProfileKind(undefined)).toBe("allocated");
    expect(parseHeapProfileKind(" promoted ")).toBe("promoted");
    expect(() => parseHeapProfileKind("live")).toThrow(
      'BENCH_HEAP_PROFILE takes allocated or promoted, not "live"',
    );
  });
});

describe("startHeapProfile", () => {
  it("writes what a process allocated while it ran, with the function that allocated it", async () => {
    const port = await freePort();
    // Allocates, and keeps, once told to on stdin: only after the profile has started.
    const child = spawn(
      process.execPath,
      [
        ...inspectorArgs(port),
        "-e",
        `const kept = [];
        process.stdin.once("data", function keepAllocating() {
          for (let i = 0; i < 50; i++) kept.push(new Array(4096).fill(i));
          console.log("done");
        });`,
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    const dir = mkdtempSync(join(tmpdir(), "koroku-heap-profile-"));
    try {
      await new Promise<void>((resolve) => {
        child.stderr.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("Debugger listening")) resolve();
        });
      });
      const profile = await startHeapProfile(port, "promoted");
      const done = new Promise<void>((resolve) => {
        child.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("done")) resolve();
        });
      });
      child.stdin.write("go\n");
      await done;
      await profile.stop(join(dir, "child.heapprofile"));
      const written = readFileSync(join(dir, "child.heapprofile"), "utf8");
      expect(written).toContain('"functionName":"keepAllocating"');
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
