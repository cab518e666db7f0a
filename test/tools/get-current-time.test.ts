import { describe, expect, it } from "vitest";
import { createGetCurrentTimeTool } from "../../src/tools/get-current-time.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";
import { outputOf } from "./temp-dir.js";

describe("get_current_time", () => {
  const now = () => new Date("2025-03-05T12:07:09.000Z");

  it("returns the ISO time, the time zone and the local time there", async () => {
    const tool = createGetCurrentTimeTool({ now, timeZone: "Asia/Tokyo" });
    const outcome = await createToolRegistry([tool]).execute(
      "get_current_time",
      {},
      toolContext("1"),
    );
    expect(outputOf(outcome)).toEqual({
      iso: "2025-03-05T12:07:09.000Z",
      timeZone: "Asia/Tokyo",
      local: "Wednesday, 5 March 2025 at 21:07:09 GMT+9",
    });
  });

  it("defaults to the machine's time zone", async () => {
    const output = await createGetCurrentTimeTool({ now }).run({}, toolContext("1"));
    expect(output).toMatchObject({
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    });
  });
});
