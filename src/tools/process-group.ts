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
 * How long output may still arrive once the group's leader has ended. A process that left its
 * group (setsid) escapes the kill and could hold the pipes open, and whatever waits on them, for ever.
 */
const PIPE_GRACE_MS = 500;

/**
 * Once the group's leader exits, kills what it left behind: a process that still holds the pipes
 * would keep `close` from ever coming. One that left the group and holds them too is cut off:
 * its pipes are closed here after PIPE_GRACE_MS.
 */
export function endGroupWithLeader(child: ChildProcess): void {
  let grace: NodeJS.Timeout | undefined;
  child.once("exit", () => {
    signalGroup(child, "SIGKILL");
    grace = setTimeout(() => {
      child.stdin?.destroy();
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, PIPE_GRACE_MS);
  });
  child.once("close", () => clearTimeout(grace));
}

/**
 * In a session of its own, the group outlives a Koroku that exits without ending it (a crash, a
 * stop cut short), and no terminal's Ctrl-C reaches it: it is killed as this process exits.
 */
export function endGroupWithProcess(child: ChildProcess): void {
  const orphaned = () => signalGroup(child, "SIGKILL");
  process.once("exit", orphaned);
  child.once("exit", () => process.off("exit", orphaned));
}
