import { describe, expect, it } from "vitest";
import { periodStarts } from "../../src/usage/report.js";

describe("periodStarts", () => {
  it("begins today and this month at midnight in TIME_ZONE, whatever the host's zone", () => {
    // 20:00 in London is already the 6th in Tokyo, and the 5th in New York.
    const now = new Date("2026-12-05T20:00:00Z");
    expect(periodStarts(now, "Asia/Tokyo")).toEqual({
      today: new Date("2026-12-05T15:00:00Z"),
      month: new Date("2026-11-30T15:00:00Z"),
    });
    expect(periodStarts(now, "America/New_York")).toEqual({
      today: new Date("2026-12-05T05:00:00Z"),
      month: new Date("2026-12-01T05:00:00Z"),
    });
  });
});
