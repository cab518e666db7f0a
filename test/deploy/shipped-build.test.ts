import { execFileSync } from "node:child_process";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const REPO_ROOT = join(import.meta.dirname, "../..");

/** The files `tsc -p <project>` compiles, relative to the repository, libraries left out. */
function compiledBy(project: string): string[] {
  const listed = execFileSync(
    process.execPath,
    [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", project, "--listFilesOnly"],
    { cwd: REPO_ROOT, encoding: "utf8" },
  );
  return listed
    .split("\n")
    .filter((file) => file !== "" && !file.includes("/node_modules/"))
    .map((file) => relative(REPO_ROOT, file));
}

describe("the shipped build", () => {
  it("compiles the service and its migrations only: no fakes, tests or benchmarks in dist/", () => {
    const files = compiledBy("tsconfig.build.json");
    expect(files).toContain("src/main.ts");
    expect(files).toContain("migrations/index.ts");
    expect(files.filter((file) => !/^(src|migrations)\//.test(file))).toEqual([]);
  });

  it("leaves the benchmarks and the fakes they use to the bench build", () => {
    const files = compiledBy("tsconfig.bench.json");
    expect(files).toContain("bench/run.ts");
    expect(files).toContain("test/fakes/telegram.ts");
    expect(files.filter((file) => file.endsWith(".test.ts"))).toEqual([]);
  });
});
