import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Whether anything is at `path`; a path that cannot be looked at counts as nothing there. */
function present(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * `mkdir -p` that fails at the first folder it cannot make, with that mkdir's error. Node's
 * recursive mkdir loops for ever when a folder cannot be made in a parent that exists (in /proc,
 * mkdir says ENOENT, the parent's EEXIST, and it tries the folder again), and the synchronous one
 * blocks the event loop, signals included, meanwhile.
 */
export function makeFolders(path: string): void {
  const missing: string[] = [];
  for (let dir = resolve(path); !present(dir) && dirname(dir) !== dir; dir = dirname(dir)) {
    missing.push(dir);
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir);
    } catch (error) {
      // Made meanwhile by another process: what was wanted.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(dir).isDirectory())
        throw error;
    }
  }
}
