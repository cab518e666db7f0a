import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configVariableNames } from "../../src/config.js";

const docs = join(import.meta.dirname, "../../docs");

describe("docs", () => {
  it("docs/README.md links every page of docs/", async () => {
    const index = await readFile(join(docs, "README.md"), "utf8");
    const pages = (await readdir(docs)).filter(
      (name) => name.endsWith(".md") && name !== "README.md",
    );
    expect(pages.length).toBeGreaterThan(10);
    expect(pages.filter((page) => !index.includes(`](${page})`))).toEqual([]);
  });

  it("docs/README.md links every decision record", async () => {
    const index = await readFile(join(docs, "README.md"), "utf8");
    const records = (await readdir(join(docs, "decisions"))).filter((name) => name.endsWith(".md"));
    expect(records.length).toBeGreaterThan(10);
    expect(records.filter((record) => !index.includes(`](decisions/${record})`))).toEqual([]);
  });

  it("configuration.md describes every variable the config reads", async () => {
    const configuration = await readFile(join(docs, "configuration.md"), "utf8");
    const names = configVariableNames();
    expect(names).toContain("TIME_ZONE");
    expect(names.filter((name) => !configuration.includes(`\`${name}\``))).toEqual([]);
  });
});
