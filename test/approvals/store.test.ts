import { describe, expect, it } from "vitest";
import { createApprovalStore } from "../../src/approvals/store.js";
import { DATABASE_KINDS } from "../helpers/databases.js";
import { migratedDatabasePerFile } from "../helpers/migrated-database.js";

describe.each(DATABASE_KINDS)("tool grants on %s", (kind) => {
  const db = migratedDatabasePerFile(kind);

  it("follow a group to the supergroup it became, keeping a grant the supergroup holds already", async () => {
    const store = createApprovalStore(db());
    await store.grant("group-100", "cal__list", 1);
    await store.grant("group-100", "run_command", 1);
    await store.grant("group-200", "run_command", 2);
    await store.grant("group-300", "cal__list", 3);

    expect(await store.moveGrants("group-100", "group-200")).toBe(1);

    expect(await store.grants("group-100")).toEqual([]);
    const moved = await store.grants("group-200");
    expect(moved.map((g) => [g.tool, g.grantedBy])).toEqual([
      ["cal__list", 1],
      ["run_command", 2],
    ]);
    expect((await store.grants("group-300")).map((g) => g.tool)).toEqual(["cal__list"]);
  });
});
