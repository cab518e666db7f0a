export type Summary = { mean: number; p50: number; p99: number; max: number };

/** Nearest-rank percentiles: every reported value is one that was really measured. */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  const total = sorted.reduce((sum, v) => sum + v, 0);
  return {
    mean: total / sorted.length,
    p50: at(50),
    p99: at(99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

export const median = (values: readonly number[]): number => summarize(values).p50;

export const round = (value: number, digits = 3): number => {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
};
