import { describe, expect, it } from "vitest";
import { lostOtherSchema } from "../../src/db/migrate.js";

const invalidSchema = (name: string) =>
  Object.assign(new Error(`schema "${name}" does not exist`), { code: "3F000" });

describe("a migration on a PostgreSQL database shared with other schemas", () => {
  // Kysely's migrator lists every schema's tables; PostgreSQL fails that list when another schema
  // is dropped under it (another deployment or test run cleaning up). That is worth a second look.
  it("looks again when another schema vanished while Kysely listed every schema's tables", () => {
    expect(lostOtherSchema(invalidSchema("t_someone_else"), "t_mine")).toBe(true);
  });

  it("does not when its own schema is missing, or on SQLite, or for another error", () => {
    expect(lostOtherSchema(invalidSchema("t_mine"), "t_mine")).toBe(false);
    expect(lostOtherSchema(invalidSchema("t_someone_else"), undefined)).toBe(false);
    expect(
      lostOtherSchema(Object.assign(new Error("permission denied"), { code: "42501" }), "t_mine"),
    ).toBe(false);
    expect(lostOtherSchema(undefined, "t_mine")).toBe(false);
  });
});
