import { DateTime } from "luxon";
import { costOf, priceOf } from "./prices.js";
import { totalOf, type UsageByModel } from "./usage-store.js";

/** Midnight of `now`'s day, and of the first of its month, in `timeZone` (TIME_ZONE). */
export function periodStarts(now: Date, timeZone: string): { today: Date; month: Date } {
  const local = DateTime.fromJSDate(now, { zone: timeZone });
  return {
    today: local.startOf("day").toJSDate(),
    month: local.startOf("month").toJSDate(),
  };
}

const n = (value: number) => value.toLocaleString("en-US");

function dollars(value: number): string {
  if (value === 0) return "$0";
  return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

/** One period's line: tokens by kind and the estimated cost of what the price table knows. */
function periodLine(label: string, byModel: UsageByModel, start: Date): string {
  const total = totalOf(byModel);
  let cost = 0;
  const unpriced: string[] = [];
  for (const { model, usage } of byModel) {
    const price = priceOf(model, start);
    if (price) cost += costOf(usage, price);
    else unpriced.push(model);
  }
  const tokens = `${n(total.promptTokens)} prompt (${n(total.cachedTokens)} cached), ${n(total.outputTokens)} output tokens`;
  const estimate = `≈ ${dollars(cost)}${unpriced.length > 0 ? ` (no price for ${unpriced.join(", ")})` : ""}`;
  return `${label}: ${tokens}, ${estimate}`;
}

/**
 * What /usage says, as plain text lines (the caller escapes them). Each period is priced at the
 * rates in effect when it began: Google's announced price changes fall on the first of a month.
 */
export function usageReport(
  today: UsageByModel,
  month: UsageByModel,
  starts: { today: Date; month: Date },
): string[] {
  return [
    "Usage of this conversation",
    periodLine("Today", today, starts.today),
    periodLine("This month", month, starts.month),
    "Estimated at list prices; cached prompt tokens are billed at a fraction. Gemini's bill is the authority.",
  ];
}
