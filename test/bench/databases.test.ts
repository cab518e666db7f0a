import { describe, expect, it } from "vitest";
import { BENCH_DATABASES, parseBenchDatabases } from "../../bench/databases.js";

describe("BENCH_DATABASES", () => {
  it("runs every database when unset or empty", () => {
    expect(parseBenchDatabases(undefined)).toEqual(BENCH_DATABASES);
    expect(parseBenchDatabases(" ")).toEqual(BENCH_DATABASES);
  });

  it("keeps the databases named, in the usual order", () => {
    expect(parseBenchDatabases("sqlite")).toEqual(["sqlite"]);
    expect(parseBenchDatabases("postgres, sqlite")).toEqual(["sqlite", "postgres"]);
  });

  it("refuses a name it does not know, saying which ones it does", () => {
    expect(() => parseBenchDatabases("sqlite,mysql")).toThrow(
      "Unknown database mysql in BENCH_DATABASES: choose from sqlite, postgres.",
    );
  });
});
