import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { eventually, type ServiceWorld, startStoppedWorld } from "../helpers/service-process.js";

const REPO_ROOT = join(import.meta.dirname, "../..");

/** The parent of every process now, from /proc (Linux). */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      map.set(Number(name), ppid);
    } catch {
      // The process ended while the list was read.
    }
  }
  return map;
}

function descendantsOf(pid: number): number[] {
  const all = parents();
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const [child, ppid] of all) {
      if (ppid === parent) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    // A zombie still answers kill(0); its state in /proc says it has ended.
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

type NpmStart = {
  npm: ChildProcess;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
  /** Every process npm started (the shell, if any, and node). */
  tree: number[];
};

/** `npm start` in its own process group, as a terminal or a process manager would run it. */
async function npmStart(env: Record<string, string>): Promise<NpmStart> {
  const npm = spawn("npm", ["start"], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = "";
  let buffered = "";
  npm.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) {
      if (line.startsWith("{")) logs.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  npm.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
  const tree: number[] = [];
  onTestFinished(() => {
    // A start that never got ready has no tree yet: its processes are still npm's.
    const started = [...tree, ...descendantsOf(npm.pid as number)];
    for (const pid of [npm.pid as number, ...started]) if (alive(pid)) process.kill(pid, "SIGKILL");
  });
  await Promise.race([
    eventually(() => logs.some((l) => l.msg === "Koroku is running")),
    exited.then((code) => {
      throw new Error(`npm start exited with ${code} before the service ran:\n${stderr}`);
    }),
  ]);
  tree.push(...descendantsOf(npm.pid as number));
  return { npm, logs, exited, tree };
}

describe("npm start", () => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startStoppedWorld();
  });
  afterAll(() => w.close());

  it("passes a SIGTERM sent to npm on to the service, which stops gracefully and leaves nothing behind", async () => {
    const run = await npmStart(w.env);
    expect(run.tree.length).toBeGreaterThan(0);
    process.kill(run.npm.pid as number, "SIGTERM");
    expect(await run.exited).toBe(0);
    await eventually(() => run.tree.every((pid) => !alive(pid)), 15_000);
    expect(run.logs.map((l) => l.msg)).toContain(
      "shutting down: no new updates, waiting for running turns",
    );
  });

  it("stops gracefully on Ctrl-C, which reaches npm and the service both", async () => {
    const run = await npmStart(w.env);
    // A terminal's Ctrl-C goes to the whole foreground process group.
    process.kill(-(run.npm.pid as number), "SIGINT");
    expect(await run.exited).toBe(0);
    await eventually(() => run.tree.every((pid) => !alive(pid)), 15_000);
    expect(run.logs.map((l) => l.msg)).toContain(
      "shutting down: no new updates, waiting for running turns",
    );
  });

  it("says in one line that the port is taken, and that another Koroku may be running", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const port = (taken.address() as { port: number }).port;
    const error = await w.start({ PORT: String(port) }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/service exited with 1/);
    const stderr = (error?.message ?? "").split("\n")[1];
    expect(stderr).toBe(
      `Port ${port} on 127.0.0.1 is already in use: another Koroku may still be running (stop it), or set PORT to a free port.`,
    );
    expect(error?.message).not.toContain("EADDRINUSE");
  });
});
