import { describe, expect, it } from "vitest";
import {
  dueText,
  firstOccurrence,
  formatInZone,
  isoInZone,
  nextOccurrence,
  parseRepeat,
  parseWhen,
  type Recurrence,
  ScheduleError,
  shortestGapMs,
} from "../../src/tasks/schedule.js";

const BERLIN = "Europe/Berlin";
const NEW_YORK = "America/New_York";
const HAVANA = "America/Havana";
const NUUK = "America/Nuuk";
const SANTIAGO = "America/Santiago";
const LORD_HOWE = "Australia/Lord_Howe";
// Wednesday 2 December 2026, 14:10 in Berlin (UTC+1).
const NOW = Date.parse("2026-12-02T13:10:00Z");
const at = (iso: string) => Date.parse(iso);

/** The next `count` runs after `fromMs`, as ISO instants. */
function runs(recurrence: Recurrence, fromMs: number, zone: string, count: number): string[] {
  const out: string[] = [];
  let cursor: number | undefined = firstOccurrence(recurrence, fromMs, zone);
  while (cursor !== undefined && out.length < count) {
    out.push(new Date(cursor).toISOString());
    cursor = nextOccurrence(recurrence, cursor, zone);
  }
  return out;
}

describe("parseWhen", () => {
  it.each([
    ["now", "2026-12-02T13:10:00.000Z"],
    ["in 20 minutes", "2026-12-02T13:30:00.000Z"],
    ["in 2 hours 30 minutes", "2026-12-02T15:40:00.000Z"],
    ["in 1 hour and 5 minutes", "2026-12-02T14:15:00.000Z"],
    ["in an hour", "2026-12-02T14:10:00.000Z"],
    ["in 3 days", "2026-12-05T13:10:00.000Z"],
    ["in 1 week", "2026-12-09T13:10:00.000Z"],
    ["18:30", "2026-12-02T17:30:00.000Z"],
    ["09:00", "2026-12-03T08:00:00.000Z"],
    ["at 9pm", "2026-12-02T20:00:00.000Z"],
    ["today 18:30", "2026-12-02T17:30:00.000Z"],
    ["tomorrow 9:00", "2026-12-03T08:00:00.000Z"],
    ["Tomorrow at 9am", "2026-12-03T08:00:00.000Z"],
    ["monday 8am", "2026-12-07T07:00:00.000Z"],
    ["wed 15:00", "2026-12-02T14:00:00.000Z"],
    ["wednesday 14:00", "2026-12-09T13:00:00.000Z"],
    ["2026-12-24T18:00", "2026-12-24T17:00:00.000Z"],
    ["2026-12-24 18:00:30", "2026-12-24T17:00:30.000Z"],
    ["2026-12-24T18:00Z", "2026-12-24T18:00:00.000Z"],
    ["2026-12-24T18:00:00+03:00", "2026-12-24T15:00:00.000Z"],
  ])("reads %j in Berlin", (text, expected) => {
    expect(new Date(parseWhen(text, NOW, BERLIN).ms).toISOString()).toBe(expected);
  });

  it("keeps the wall-clock time of 'in N days' across a DST change, and moves 'in N hours'", () => {
    // Saturday 28 March 2026, 09:00 CET; the clocks go forward on Sunday.
    const saturday = at("2026-03-28T08:00:00Z");
    expect(isoInZone(parseWhen("in 1 day", saturday, BERLIN).ms, BERLIN)).toBe(
      "2026-03-29T09:00:00+02:00",
    );
    expect(isoInZone(parseWhen("in 24 hours", saturday, BERLIN).ms, BERLIN)).toBe(
      "2026-03-29T10:00:00+02:00",
    );
    expect(isoInZone(parseWhen("tomorrow 9:00", saturday, BERLIN).ms, BERLIN)).toBe(
      "2026-03-29T09:00:00+02:00",
    );
  });

  it("moves a local time that a spring-forward gap skips to the gap's end, keeping the time asked", () => {
    // Saturday 28 March 2026, 02:30 CET; on Sunday the clocks go from 02:00 to 03:00.
    const saturday = at("2026-03-28T01:30:00Z");
    for (const text of ["tomorrow 2:30", "2026-03-29T02:30", "in 1 day", "sunday 2:30am"]) {
      const when = parseWhen(text, saturday, BERLIN);
      expect({ text, at: isoInZone(when.ms, BERLIN), wall: when.wall }).toEqual({
        text,
        at: "2026-03-29T03:00:00+02:00",
        wall: { hour: 2, minute: 30 },
      });
    }
    // Elapsed time is exact: 24 hours from 02:30 CET is 03:30 CEST.
    expect(parseWhen("in 24 hours", saturday, BERLIN)).toEqual({
      ms: at("2026-03-29T01:30:00Z"),
      wall: { hour: 3, minute: 30 },
    });
  });

  // The first of a fall-back night's two times, and the day asked where a gap is at midnight.
  it.each([
    // Berlin repeats 02:00-03:00 on 25 October; Havana repeats its midnight hour on 1 November.
    [BERLIN, "2026-10-24T12:00:00Z", "tomorrow 2:30", "2026-10-25T02:30:00+02:00"],
    [BERLIN, "2026-10-24T12:00:00Z", "2026-10-25T02:30:15", "2026-10-25T02:30:15+02:00"],
    [HAVANA, "2026-10-31T16:00:00Z", "tomorrow 0:30", "2026-11-01T00:30:00-04:00"],
    [HAVANA, "2026-10-31T16:00:00Z", "sunday 0:30", "2026-11-01T00:30:00-04:00"],
    [HAVANA, "2026-10-31T16:00:00Z", "2026-11-01T00:30", "2026-11-01T00:30:00-04:00"],
    // Nuuk's clocks go from 23:00 to midnight on 28 March: 23:30 that night comes after the gap.
    [NUUK, "2026-03-27T12:00:00Z", "tomorrow 23:30", "2026-03-29T00:30:00-01:00"],
    [NUUK, "2026-03-28T01:30:00Z", "in 1 day", "2026-03-29T00:30:00-01:00"],
    [NUUK, "2026-03-27T12:00:00Z", "2026-03-28T23:30", "2026-03-29T00:30:00-01:00"],
    // Santiago's go from midnight to 01:00 on 6 September; Lord Howe's from 02:00 to 02:30.
    [SANTIAGO, "2026-09-05T15:00:00Z", "tomorrow 0:30", "2026-09-06T01:00:00-03:00"],
    [LORD_HOWE, "2026-10-03T01:00:00Z", "tomorrow 2:15", "2026-10-04T02:30:00+11:00"],
    ["Pacific/Kiritimati", "2026-12-02T13:10:00Z", "tomorrow 0:00", "2026-12-04T00:00:00+14:00"],
  ])("reads a time around a DST change in %s at %s: %j", (zone, now, text, expected) => {
    expect(isoInZone(parseWhen(text, at(now), zone).ms, zone)).toBe(expected);
  });

  it("reads 24:00 as the next day's midnight", () => {
    expect(parseWhen("2026-12-24T24:00", NOW, BERLIN)).toEqual({
      ms: at("2026-12-24T23:00:00Z"),
      wall: { hour: 0, minute: 0 },
    });
  });

  it("gives the time of day an offset names as the zone's", () => {
    expect(parseWhen("2026-12-24T18:00:00+03:00", NOW, BERLIN).wall).toEqual({
      hour: 16,
      minute: 0,
    });
  });

  it.each([
    "soon",
    "tomorrow",
    "in five minutes",
    "in 2 fortnights",
    "25:00",
    "9",
    "2026-13-01T09:00",
  ])("refuses %j with the accepted forms", (text) => {
    expect(() => parseWhen(text, NOW, BERLIN)).toThrow(ScheduleError);
    expect(() => parseWhen(text, NOW, BERLIN)).toThrow(/Accepted forms: an ISO date-time/);
  });
});

describe("recurrences", () => {
  it("runs 'daily' at 9:00 Berlin time on both sides of the spring DST change", () => {
    const first = at("2026-03-27T08:00:00Z");
    const daily = parseRepeat("daily", first, BERLIN);
    expect(daily).toEqual({ kind: "cron", expression: "0 9 * * *" });
    expect(runs(daily, first, BERLIN, 4).map((r) => isoInZone(at(r), BERLIN))).toEqual([
      "2026-03-27T09:00:00+01:00",
      "2026-03-28T09:00:00+01:00",
      "2026-03-29T09:00:00+02:00",
      "2026-03-30T09:00:00+02:00",
    ]);
  });

  it("runs 'daily' at 9:00 New York time across the autumn change", () => {
    const first = at("2026-10-31T13:00:00Z");
    const daily = parseRepeat("every day", first, NEW_YORK);
    expect(runs(daily, first, NEW_YORK, 3)).toEqual([
      "2026-10-31T13:00:00.000Z",
      "2026-11-01T14:00:00.000Z",
      "2026-11-02T14:00:00.000Z",
    ]);
  });

  it("runs a daily 02:30 once on the fall-back night and after the gap on the spring night", () => {
    const cron = parseRepeat("30 2 * * *", NOW, BERLIN);
    expect(runs(cron, at("2026-10-24T12:00:00Z"), BERLIN, 2)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    expect(runs(cron, at("2026-03-28T12:00:00Z"), BERLIN, 2)).toEqual([
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("repeats the time of day asked when a spring-forward gap moved the first run", () => {
    const saturday = at("2026-03-28T08:00:00Z");
    const when = parseWhen("tomorrow 2:30", saturday, BERLIN);
    const daily = parseRepeat("daily", when.ms, BERLIN, when.wall);
    expect(daily).toEqual({ kind: "cron", expression: "30 2 * * *" });
    expect(runs(daily, when.ms, BERLIN, 3).map((r) => isoInZone(at(r), BERLIN))).toEqual([
      "2026-03-29T03:00:00+02:00",
      "2026-03-30T02:30:00+02:00",
      "2026-03-31T02:30:00+02:00",
    ]);
  });

  it("skips weekends for 'weekdays' and starts on the next weekday when `when` is a Saturday", () => {
    const saturday = at("2026-12-05T07:30:00Z");
    const weekdays = parseRepeat("weekdays", saturday, BERLIN);
    expect(weekdays).toEqual({ kind: "cron", expression: "30 8 * * 1-5" });
    expect(runs(weekdays, saturday, BERLIN, 2)).toEqual([
      "2026-12-07T07:30:00.000Z",
      "2026-12-08T07:30:00.000Z",
    ]);
  });

  it("reads weekly forms on the first run's weekday or the named days", () => {
    const wednesday = at("2026-12-02T17:00:00Z");
    expect(parseRepeat("weekly", wednesday, BERLIN)).toEqual({
      kind: "cron",
      expression: "0 18 * * 3",
    });
    expect(parseRepeat("weekly on mon, thu", wednesday, BERLIN)).toEqual({
      kind: "cron",
      expression: "0 18 * * 1,4",
    });
    expect(parseRepeat("every Sunday and Friday", wednesday, BERLIN)).toEqual({
      kind: "cron",
      expression: "0 18 * * 0,5",
    });
  });

  it("counts 'every N hours' as elapsed time from the first run, DST or not", () => {
    const first = at("2026-03-29T00:00:00Z");
    const every = parseRepeat("every 2 hours", first, BERLIN);
    expect(runs(every, first, BERLIN, 3)).toEqual([
      "2026-03-29T00:00:00.000Z",
      "2026-03-29T02:00:00.000Z",
      "2026-03-29T04:00:00.000Z",
    ]);
    // After downtime the next run is the next one still ahead, not the missed ones.
    expect(nextOccurrence(every, at("2026-03-29T09:30:00Z"), BERLIN)).toBe(
      at("2026-03-29T10:00:00Z"),
    );
    expect(parseRepeat("hourly", first, BERLIN)).toMatchObject({ everyMs: 3_600_000 });
    expect(parseRepeat("every 30 minutes", first, BERLIN)).toMatchObject({ everyMs: 1_800_000 });
  });

  it("reads cron in the zone, with names, and measures its shortest gap", () => {
    const cron = parseRepeat("0 8 * * MON", NOW, BERLIN);
    expect(runs(cron, NOW, BERLIN, 1)).toEqual(["2026-12-07T07:00:00.000Z"]);
    // The week with the spring change is an hour short.
    expect(shortestGapMs(cron, NOW, BERLIN)).toBe(7 * 24 * 3_600_000 - 3_600_000);
    expect(shortestGapMs(parseRepeat("*/5 9 * * *", NOW, BERLIN), NOW, BERLIN)).toBe(300_000);
  });

  it("gives no run for a cron date that never comes", () => {
    expect(nextOccurrence(parseRepeat("0 9 30 2 *", NOW, BERLIN), NOW, BERLIN)).toBeUndefined();
  });

  it.each(["sometimes", "every 2 fortnights", "0 9 * *", "61 9 * * *"])(
    "refuses %j, saying what it accepts",
    (text) => {
      expect(() => parseRepeat(text, NOW, BERLIN)).toThrow(ScheduleError);
    },
  );
});

describe("formatting", () => {
  it("shows a run in the zone, and when it was due relative to today", () => {
    expect(formatInZone(at("2026-12-03T08:00:00Z"), BERLIN)).toBe(
      "Thu 3 Dec 2026, 09:00 (Europe/Berlin)",
    );
    expect(dueText(at("2026-12-02T08:00:00Z"), NOW, BERLIN)).toBe("09:00");
    expect(dueText(at("2026-12-01T08:00:00Z"), NOW, BERLIN)).toBe("09:00 on Tue 1 Dec");
  });
});
