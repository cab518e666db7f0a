// `node scripts/run-built.mjs dist/src/main.js` — what `npm start` and `npm run chat` run.
// After a fresh `npm ci`, dist/ is built by `prepare`; after an edit it is rebuilt first, so the
// service never runs stale JavaScript. A clean tree costs a few stat calls, not a compile, and
// the entry then runs in this same process: a second Node start-up would cost ~0.1 s.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const entry = process.argv[2];
if (!entry) {
  process.stderr.write("usage: node scripts/run-built.mjs dist/src/<entry>.js [arguments]\n");
  process.exit(2);
}

function newestMtime(dir) {
  let newest = 0;
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, item.name);
    const mtime = item.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    newest = Math.max(newest, mtime);
  }
  return newest;
}

const sources = ["src", "migrations"].filter(existsSync);
const stale = !existsSync(entry) || Math.max(...sources.map(newestMtime)) > statSync(entry).mtimeMs;
if (stale) {
  process.stderr.write("Compiling TypeScript (dist/ is missing or older than src/)…\n");
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], {
    stdio: "inherit",
  });
}
// The entry sees the command line it would see if Node had started it directly.
process.argv.splice(1, 2, resolve(entry));
await import(pathToFileURL(resolve(entry)).href);
