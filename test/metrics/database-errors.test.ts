import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { type Harness, startHarness } from "../helpers/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it("counts failed database queries in koroku_database_errors_total", async () => {
  h = await startHarness();
  const before = await h.app.metrics.render();
  expect(before).toContain("koroku_database_errors_total 0");
  await expect(sql`select missing from no_such_table`.execute(h.app.database.db)).rejects.toThrow();
  await sql`select 1`.execute(h.app.database.db);
  expect(await h.app.metrics.render()).toContain("koroku_database_errors_total 1");
});
