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
    // Keeps a growing list, so that what it allocates lives through every collection.
    const child = spawn(
      process.execPath,
      [
        ...inspectorArgs(port),
        "-e",
        "const kept = []; setInterval(function keepAllocating() { kept.push(new Array(4096).fill(kept.length)); console.log(kept.length); }, 5);",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const dir = mkdtempSync(join(tmpdir(), "koroku-heap-profile-"));
    try {
      await new Promise<void>((resolve) => {
        child.stderr.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("Debugger listening")) resolve();
        });
      });
      const profile = await startHeapProfile(port, "promoted");
      // Twenty more arrays kept since the profile started.
      await new Promise<void>((resolve) => {
        let ticks = 0;
        child.stdout.on("data", (chunk: Buffer) => {
          ticks += chunk.toString().split("\n").length - 1;
          if (ticks >= 20) resolve();
        });
      });
      await profile.stop(join(dir, "child.heapprofile"));
      const written = readFileSync(join(dir, "child.heapprofile"), "utf8");
      expect(written).toContain('"functionName":"keepAllocating"');
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
