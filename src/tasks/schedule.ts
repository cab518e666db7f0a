import { Cron } from "croner";
import { DateTime } from "luxon";

/**
 * The time arithmetic of scheduled tasks, pure: every function takes "now" and the time zone as
 * arguments. Wall-clock recurrences (daily at 9:00, weekdays, weekly, cron) are computed in the
 * zone by croner, so a daylight-saving change moves the instant, never the 9:00; a local time
 * that a spring-forward gap skips runs when the gap ends, and one that a fall-back repeats runs
 * once, at its first occurrence. "Every N hours/minutes" is elapsed time from the first run.
 */

/** How a task repeats; stored as it is (see src/tasks/store.ts). */
export type Recurrence =
  | { kind: "cron"; expression: string }
  | { kind: "interval"; everyMs: number; anchorMs: number };

export class ScheduleError extends Error {}

/**
 * How far ahead a task may be scheduled, and the longest gap between two runs of a recurring one:
 * a reminder for next year's birthday fits, a typo of a few extra digits does not.
 */
export const HORIZON_YEARS = 10;

/** The refusal of a time or repetition past the horizon, in words the model can relay. */
export const tooFarText = (asked: string) =>
  `"${asked}" is too far ahead: a task can be scheduled at most ${HORIZON_YEARS} years ahead, and repeat at least once in ${HORIZON_YEARS} years. Choose a nearer time.`;

/** The last instant a task may be due, from `nowMs`: HORIZON_YEARS ahead on the calendar. */
export function horizonMs(nowMs: number, zone: string): number {
  return DateTime.fromMillis(nowMs, { zone }).plus({ years: HORIZON_YEARS }).toMillis();
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

/** "monday", "mondays", "mon" or "mon." to the cron number (Sunday 0). */
function weekdayNumber(word: string): number | undefined {
  const w = word.toLowerCase().replace(/\.$/, "");
  const index = WEEKDAYS.findIndex((d) => w === d || w === `${d}s` || w === d.slice(0, 3));
  return index < 0 ? undefined : index;
}

export const WHEN_FORMS =
  'an ISO date-time ("2026-12-03T09:00" is read in the time zone; a "Z" or "+01:00" suffix is absolute), "now", "in 20 minutes", "in 2 hours 30 minutes", "in 3 days", "in 1 week", "09:00" (today, or tomorrow once passed), "today 18:30", "tomorrow 9:00", "monday 8am" (the next Monday)';

export const REPEAT_FORMS =
  '"daily", "weekdays", "weekly" (the first run\'s weekday), "weekly on mon,thu", "every monday", "hourly", "every 2 hours", "every 30 minutes", or a 5-field cron expression ("0 8 * * 1" = Mondays 08:00); daily/weekdays/weekly run at the time of day of `when`';

const UNIT_MS: Record<string, { ms: number } | { days: number }> = {
  m: { ms: MINUTE_MS },
  min: { ms: MINUTE_MS },
  mins: { ms: MINUTE_MS },
  minute: { ms: MINUTE_MS },
  minutes: { ms: MINUTE_MS },
  h: { ms: HOUR_MS },
  hr: { ms: HOUR_MS },
  hrs: { ms: HOUR_MS },
  hour: { ms: HOUR_MS },
  hours: { ms: HOUR_MS },
  d: { days: 1 },
  day: { days: 1 },
  days: { days: 1 },
  w: { days: 7 },
  week: { days: 7 },
  weeks: { days: 7 },
};

const TIME_OF_DAY = /^(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/i;

function timeOfDay(text: string): { hour: number; minute: number } | undefined {
  const match = TIME_OF_DAY.exec(text.trim());
  if (!match) return undefined;
  let hour = Number(match[1]);
  const minute = match[2] === undefined ? 0 : Number(match[2]);
  const meridiem = match[3]?.toLowerCase();
  // "9" alone is too easily a count of something; an hour needs ":MM" or am/pm.
  if (match[2] === undefined && meridiem === undefined) return undefined;
  if (meridiem) {
    if (hour < 1 || hour > 12) return undefined;
    hour = (hour % 12) + (meridiem === "pm" ? 12 : 0);
  }
  if (hour > 23 || minute > 59) return undefined;
  return { hour, minute };
}

/** A wall-clock time of day, as asked ("09:00"), whatever instant it comes to on a given day. */
export type WallTime = { hour: number; minute: number };

/**
 * A date of the calendar, as midnight UTC: adding days to it never meets a DST change, which in
 * some zones moves a local time, or midnight itself, onto another day.
 */
const dateOf = (at: DateTime): DateTime => DateTime.utc(at.year, at.month, at.day);

/** Where a date can begin and end in any zone (UTC+14 to UTC-12), and a gap's hour after that. */
const EARLIEST_START_HOURS = 14;
const LATEST_END_HOURS = 24 + 12 + 2;

/**
 * The instant of a wall-clock time on a date in `zone`, as croner reads it, so that a one-time
 * task and a recurring one agree: a time a spring-forward gap skips comes to the gap's end, and
 * one a fall-back repeats to its first occurrence (luxon alone would give 03:30 and the second).
 * Where croner finds no such time that day (a gap that ends at midnight), luxon's reading stands:
 * after the gap.
 */
function atTime(date: DateTime, time: WallTime, zone: string): DateTime {
  // An invalid date (past JavaScript's last) stays invalid, for parseWhen to refuse.
  if (!date.isValid) return date;
  const expression = `${time.minute} ${time.hour} ${date.day} ${date.month} *`;
  const from = date.minus({ hours: EARLIEST_START_HOURS }).toMillis();
  const next = firstOccurrence({ kind: "cron", expression }, from, zone);
  if (next !== undefined && next < date.plus({ hours: LATEST_END_HOURS }).toMillis()) {
    return DateTime.fromMillis(next, { zone });
  }
  const { year, month, day } = date;
  return DateTime.fromObject({ year, month, day, ...time }, { zone });
}

/** A parsed `when`: its instant, and the time of day a recurrence from it keeps. */
export type When = { ms: number; wall: WallTime };

type Parsed = { at: DateTime; wall: WallTime };

const wallOf = (at: DateTime): WallTime => ({ hour: at.hour, minute: at.minute });

function relative(text: string, now: DateTime): Parsed | undefined {
  const body = /^in\s+(.+)$/i.exec(text)?.[1];
  if (body === undefined) return undefined;
  const pieces = body.split(/\s*(?:,|\band\b)\s*|\s+(?=\d)/i).filter(Boolean);
  if (pieces.length === 0) return undefined;
  let days = 0;
  let ms = 0;
  for (const piece of pieces) {
    const match = /^(\d+|an?|one)\s*([a-z]+)$/i.exec(piece.trim());
    if (!match) return undefined;
    const count = /^\d+$/.test(match[1] as string) ? Number(match[1]) : 1;
    const unit = UNIT_MS[(match[2] as string).toLowerCase()];
    if (!unit) return undefined;
    if ("days" in unit) days += unit.days * count;
    else ms += unit.ms * count;
  }
  // Days move the calendar (9:00 stays 9:00 across a DST change), then minutes and hours elapse.
  const sameTime =
    days === 0
      ? now
      : atTime(dateOf(now).plus({ days }), wallOf(now), now.zone.name).plus({
          seconds: now.second,
          milliseconds: now.millisecond,
        });
  if (ms === 0) return { at: sameTime, wall: wallOf(now) };
  const at = sameTime.plus(ms);
  return { at, wall: wallOf(at) };
}

function onDay(text: string, now: DateTime): Parsed | undefined {
  const zone = now.zone.name;
  const today = dateOf(now);
  const on = (days: number, time: WallTime) => atTime(today.plus({ days }), time, zone);
  const match = /^(today|tomorrow|[a-z]+\.?)(?:\s+(?:at\s+)?(.+))?$/i.exec(text);
  if (!match) {
    const time = timeOfDay(text);
    if (!time) return undefined;
    const later = on(0, time);
    return { at: later > now ? later : on(1, time), wall: time };
  }
  const time = match[2] === undefined ? undefined : timeOfDay(match[2]);
  if (!time) return undefined;
  const word = (match[1] as string).toLowerCase();
  if (word === "today") return { at: on(0, time), wall: time };
  if (word === "tomorrow") return { at: on(1, time), wall: time };
  const weekday = weekdayNumber(word);
  if (weekday === undefined) return undefined;
  // luxon counts Monday 1 … Sunday 7; cron Sunday 0.
  const ahead = ((weekday === 0 ? 7 : weekday) - now.weekday + 7) % 7;
  const candidate = on(ahead, time);
  return { at: candidate > now ? candidate : on(ahead + 7, time), wall: time };
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})/;
const ISO_OFFSET = /(?:z|[+-]\d{2}(?::?\d{2})?)$/i;

function iso(text: string, zone: string): Parsed | undefined {
  const fields = ISO.exec(text)?.slice(1).map(Number);
  if (!fields) return undefined;
  const parsed = DateTime.fromISO(text.replace(" ", "T"), { zone, setZone: false });
  if (!parsed.isValid) return undefined;
  const [year, month, day, hour, minute] = fields as [number, number, number, number, number];
  // With an offset the instant is exact, as is "24:00" (the next day's midnight); otherwise the
  // text is a wall time of the zone.
  if (ISO_OFFSET.test(text) || hour === 24) return { at: parsed, wall: wallOf(parsed) };
  const wall = { hour, minute };
  const at = atTime(DateTime.utc(year, month, day), wall, zone);
  return { at: at.plus({ seconds: parsed.second, milliseconds: parsed.millisecond }), wall };
}

/**
 * When a task should first run, from what the model wrote, and the time of day it names; throws a
 * ScheduleError that names the accepted forms. The instant may be in the past (an ISO time or
 * "today 8:00"): the caller decides.
 */
export function parseWhen(text: string, nowMs: number, zone: string): When {
  const trimmed = text.trim().replace(/\s+/g, " ");
  const now = DateTime.fromMillis(nowMs, { zone });
  const lower = trimmed.toLowerCase().replace(/^at /, "");
  const result =
    lower === "now"
      ? { at: now, wall: wallOf(now) }
      : (iso(trimmed, zone) ?? relative(lower, now) ?? onDay(lower, now));
  if (!result) {
    throw new ScheduleError(`Cannot read the time "${text}". Accepted forms: ${WHEN_FORMS}.`);
  }
  // luxon makes an invalid DateTime of a date past the year 275760 (JavaScript's last).
  if (!result.at.isValid) throw new ScheduleError(tooFarText(text));
  return { ms: result.at.toMillis(), wall: result.wall };
}

function cronOf(expression: string): Cron {
  return new Cron(expression, { mode: "5-part", paused: true });
}

function dayList(text: string): number[] | undefined {
  const words = text.split(/\s*(?:,|\band\b|\s)\s*/i).filter(Boolean);
  const days = words.map(weekdayNumber);
  if (days.length === 0 || days.some((d) => d === undefined)) return undefined;
  return [...new Set(days as number[])].sort((a, b) => a - b);
}

/**
 * The recurrence `repeat` names, for a task whose first run is `firstMs`: its weekday (for
 * "weekly") comes from that run, and its time of day from `wall`, by default that run's. (A
 * first run a DST gap moved, 02:30 run at 03:00, still repeats at 02:30.) Throws a ScheduleError
 * naming the accepted forms.
 */
export function parseRepeat(
  text: string,
  firstMs: number,
  zone: string,
  wall: WallTime = wallOf(DateTime.fromMillis(firstMs, { zone })),
): Recurrence {
  const lower = text.trim().toLowerCase().replace(/\s+/g, " ");
  const first = DateTime.fromMillis(firstMs, { zone });
  const at = `${wall.minute} ${wall.hour}`;
  const cron = (days: string): Recurrence => ({ kind: "cron", expression: `${at} * * ${days}` });
  if (lower === "daily" || lower === "every day") return cron("*");
  if (lower === "weekdays" || lower === "every weekday" || lower === "on weekdays")
    return cron("1-5");
  if (lower === "weekly" || lower === "every week") return cron(String(first.weekday % 7));
  const on = /^(?:weekly on|every|on) (.+)$/.exec(lower)?.[1];
  const days = on === undefined ? undefined : dayList(on);
  if (days) return cron(days.join(","));
  if (lower === "hourly") return { kind: "interval", everyMs: HOUR_MS, anchorMs: firstMs };
  const every = /^every (\d+) ?(minutes?|mins?|m|hours?|hrs?|h)$/.exec(lower);
  if (every) {
    const unit = (every[2] as string).startsWith("h") ? HOUR_MS : MINUTE_MS;
    return { kind: "interval", everyMs: Number(every[1]) * unit, anchorMs: firstMs };
  }
  if (lower.split(" ").length === 5) {
    try {
      cronOf(lower);
      return { kind: "cron", expression: lower };
    } catch (error) {
      throw new ScheduleError(
        `"${text}" is not a valid cron expression (${error instanceof Error ? error.message : String(error)}).`,
      );
    }
  }
  throw new ScheduleError(`Cannot read the repetition "${text}". Accepted forms: ${REPEAT_FORMS}.`);
}

/** The first run of a recurrence strictly after `afterMs`, or undefined when it never comes. */
export function nextOccurrence(
  recurrence: Recurrence,
  afterMs: number,
  zone: string,
): number | undefined {
  if (recurrence.kind === "interval") {
    const { everyMs, anchorMs } = recurrence;
    if (afterMs < anchorMs) return anchorMs;
    return anchorMs + (Math.floor((afterMs - anchorMs) / everyMs) + 1) * everyMs;
  }
  const next = new Cron(recurrence.expression, {
    mode: "5-part",
    paused: true,
    timezone: zone,
  }).nextRun(new Date(afterMs));
  return next?.getTime();
}

/** The first run at or after `fromMs` (a `when` that itself fits the recurrence is its first run). */
export function firstOccurrence(
  recurrence: Recurrence,
  fromMs: number,
  zone: string,
): number | undefined {
  return nextOccurrence(recurrence, fromMs - 1, zone);
}

/** Cron runs looked at to find a recurrence's shortest gap: a day of every-15-minutes runs. */
const GAP_SAMPLES = 100;

/** The shortest time between two runs of a recurrence, over its next runs from `fromMs`. */
export function shortestGapMs(recurrence: Recurrence, fromMs: number, zone: string): number {
  if (recurrence.kind === "interval") return recurrence.everyMs;
  let shortest = Number.POSITIVE_INFINITY;
  let previous = nextOccurrence(recurrence, fromMs, zone);
  for (let i = 0; i < GAP_SAMPLES && previous !== undefined; i++) {
    const next = nextOccurrence(recurrence, previous, zone);
    if (next === undefined) break;
    shortest = Math.min(shortest, next - previous);
    previous = next;
  }
  return shortest;
}

/** A run's time as people read it in the zone, e.g. "Thu 3 Dec 2026, 09:00 (Europe/Berlin)". */
export function formatInZone(ms: number, zone: string): string {
  return `${DateTime.fromMillis(ms, { zone }).toFormat("ccc d LLL yyyy, HH:mm")} (${zone})`;
}

/** The run's time with its UTC offset, exact for the model: "2026-12-03T09:00:00+01:00". */
export function isoInZone(ms: number, zone: string): string {
  return DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true }) ?? "";
}

/** "09:00" on the run's day, or "09:00 on Tue 1 Dec" when it was another day. */
export function dueText(dueMs: number, nowMs: number, zone: string): string {
  const due = DateTime.fromMillis(dueMs, { zone });
  const now = DateTime.fromMillis(nowMs, { zone });
  const time = due.toFormat("HH:mm");
  return due.hasSame(now, "day") ? time : `${time} on ${due.toFormat("ccc d LLL")}`;
}

/** How a recurrence reads in a list: "cron 0 9 * * 1-5", "every 2 hours". */
export function describeRecurrence(recurrence: Recurrence): string {
  if (recurrence.kind === "cron") return `cron ${recurrence.expression}`;
  const minutes = recurrence.everyMs / MINUTE_MS;
  if (minutes % 60 === 0) return minutes === 60 ? "every hour" : `every ${minutes / 60} hours`;
  return `every ${minutes} minutes`;
}
