// `npm start` after a fresh `npm ci` finds dist/ built by `prepare`; after an edit it rebuilds,
// so the service never runs stale JavaScript. A clean tree costs a few stat calls, not a compile.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const output = "dist/src/main.js";

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    newest = Math.max(newest, mtime);
  }
  return newest;
}

const sources = ["src", "migrations", "bench", "test/fakes"].filter(existsSync);
const stale =
  !existsSync(output) || Math.max(...sources.map(newestMtime)) > statSync(output).mtimeMs;
if (stale) {
  process.stderr.write("Compiling TypeScript (dist/ is missing or older than src/)…\n");
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], {
    stdio: "inherit",
  });
}
