import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The directory of the package a file belongs to: the nearest one above it with a package.json. */
function packageRoot(file: string): string {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  throw new Error(`no package.json above ${file}`);
}

/**
 * The URL of a worker thread's module, `name` beside the module at `from` (its import.meta.url),
 * as the build made it. Run from dist/, that is the file beside it. Run from the TypeScript
 * sources (the test runner), it is the same file in dist/: a worker thread loads JavaScript
 * only, so the tests need `npm run build` first, as the end-to-end tests do.
 */
export function builtWorkerUrl(name: string, from: string): URL {
  const url = new URL(name, from);
  if (!from.endsWith(".ts")) return url;
  const source = fileURLToPath(url);
  const root = packageRoot(source);
  const built = join(root, "dist", relative(root, source));
  if (!existsSync(built)) {
    throw new Error(`${relative(root, built)} is missing: run \`npm run build\` first`);
  }
  return pathToFileURL(built);
}
