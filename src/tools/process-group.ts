import type { ChildProcess } from "node:child_process";

/**
 * Sends `signal` to the process group `child` leads (it was spawned detached, so everything it
 * started is in the group): a shell's background jobs, the server a wrapper such as npx runs.
 */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: every process of the group has already exited.
  }
}

/**
 * Once the group's leader exits, kills what it left behind: a process that still holds the pipes
 * would keep `close` from ever coming. One that left the group and holds them too is cut off:
 * its pipes are closed here after `graceMs`.
 */
export function endGroupWithLeader(child: ChildProcess, graceMs: number): void {
  let grace: NodeJS.Timeout | undefined;
  child.once("exit", () => {
    signalGroup(child, "SIGKILL");
    grace = setTimeout(() => {
      child.stdin?.destroy();
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, graceMs);
  });
  child.once("close", () => clearTimeout(grace));
}
