import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const src = join(root, "src");

/** Every TypeScript file under `dir`, with its text. */
async function sources(dir: string): Promise<{ path: string; text: string }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith(".ts"));
  return Promise.all(
    files.map(async (e) => {
      const path = join(e.parentPath, e.name);
      return { path: relative(root, path), text: await readFile(path, "utf8") };
    }),
  );
}

describe("the source layout (issue 32's rooms)", () => {
  it("keeps src/telegram/ under 2,500 lines", async () => {
    const lines = (await sources(join(src, "telegram"))).reduce(
      (sum, f) => sum + f.text.split("\n").length - 1,
      0,
    );
    expect(lines).toBeGreaterThan(1_000);
    expect(lines).toBeLessThan(2_500);
  });

  it("has only the composition root import src/telegram/, so no room imports it back", async () => {
    const importers = (await sources(src))
      .filter((f) => !f.path.startsWith("src/telegram/"))
      .filter((f) => /from "(\.\.?\/)+telegram\//.test(f.text))
      .map((f) => f.path);
    expect(importers).toEqual(["src/service.ts"]);
  });

  it("runs no source through eval", async () => {
    const evaluating = (await sources(src))
      .filter((f) => /\beval\s*[(:]/.test(f.text))
      .map((f) => f.path);
    expect(evaluating).toEqual([]);
  });

  it("names every folder of src/ in architecture.md's layout", async () => {
    const layout = await readFile(join(root, "docs/architecture.md"), "utf8");
    const folders = (await readdir(src, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => `src/${e.name}/`);
    expect(folders.length).toBeGreaterThan(20);
    expect(folders.filter((folder) => !layout.includes(folder))).toEqual([]);
  });
});
