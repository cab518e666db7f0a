import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Runs `script` (an ES module's source) in a Node process of its own, and gives what it printed
 * and its exit code: for what only a whole process shows, such as whether it stays alive. The
 * script runs from a file, not `--eval`: worker threads inherit the process's options, and
 * `--input-type` would stop every one of them from loading.
 */
export async function runModuleScript(
  script: string,
): Promise<{ code: number | null; stdout: string }> {
  const dir = mkdtempSync(join(tmpdir(), "koroku-script-"));
  try {
    const file = join(dir, "script.mjs");
    writeFileSync(file, script);
    const child = spawn(process.execPath, [file], { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    const [code] = (await once(child, "exit")) as [number | null];
    return { code, stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
