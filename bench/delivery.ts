import type { DriverCounts } from "./chat-driver.js";
import type { FakesStats } from "./fakes.js";
import type { BenchRow } from "./run.js";

export type Delivery = {
  turnsPosted: number;
  /** Counted by the fake Telegram over the run, after a graceful stop of the service. */
  sendMessages: number;
  geminiRejections: number;
  counts: DriverCounts;
};

/** What the fakes counted between two stats calls: take `after` once the service has stopped. */
export function deliveryBetween(
  before: FakesStats,
  after: FakesStats,
  turnsPosted: number,
  counts: DriverCounts,
): Delivery {
  return {
    turnsPosted,
    sendMessages: after.totals.sendMessages - before.totals.sendMessages,
    geminiRejections: after.totals.geminiRejections - before.totals.geminiRejections,
    counts,
  };
}

/** Each posted turn answered exactly once, with the model's words: what makes the timings count. */
export function deliveryRow(
  where: Pick<BenchRow, "benchmark" | "database" | "case">,
  delivery: Delivery,
): BenchRow {
  const { turnsPosted, sendMessages, geminiRejections, counts } = delivery;
  const problems = [
    counts.unexpected > 0 && `${counts.unexpected} answers nobody waited for (duplicates?)`,
    counts.wrongText > 0 && `${counts.wrongText} answers were not the model's (failed turns)`,
    geminiRejections > 0 && `the fake Gemini refused ${geminiRejections} requests as invalid`,
  ].filter((problem) => typeof problem === "string");
  const ok = sendMessages === turnsPosted && problems.length === 0;
  return {
    ...where,
    metric: "sendMessage calls",
    value: sendMessages,
    unit: "",
    target: `${turnsPosted.toLocaleString("en-US")}, one per turn`,
    ok,
    note:
      problems.join("; ") ||
      "counted after a graceful stop, warm-up included; every answer was the model's",
  };
}
