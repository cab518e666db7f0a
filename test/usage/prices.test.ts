import { describe, expect, it } from "vitest";
import { DEFAULT_COMPACTION_MODEL, DEFAULT_MODEL } from "../../src/config.js";
import { costOf, PRICES, priceOf } from "../../src/usage/prices.js";

describe("the price table", () => {
  it("prices both default models", () => {
    const now = new Date();
    expect(priceOf(DEFAULT_MODEL, now)).toBeDefined();
    expect(priceOf(DEFAULT_COMPACTION_MODEL, now)).toBeDefined();
  });

  it("takes the rates in effect on the day, from the host's local midnight", () => {
    const lastPromotionalMoment = new Date(2026, 11, 31, 23, 59, 59);
    const firstListPriceDay = new Date(2027, 0, 1);
    expect(priceOf("gemini-3.8-flash", lastPromotionalMoment)).toMatchObject({
      input: 0.75,
      output: 3.75,
    });
    expect(priceOf("gemini-3.8-flash", firstListPriceDay)).toMatchObject({
      input: 1.5,
      output: 7.5,
    });
    expect(priceOf("gemini-3.8-flash", new Date(2031, 5, 1))?.from).toBe("2027-01-01");
  });

  it("knows a model by its id with or without the models/ prefix, and no other", () => {
    const at = new Date(2026, 11, 3);
    expect(priceOf("models/gemini-3.5-flash-lite", at)).toBe(priceOf("gemini-3.5-flash-lite", at));
    expect(priceOf("gemini-3.5-flash-lite", at)?.input).toBe(0.3);
    expect(priceOf("some-new-model", at)).toBeUndefined();
  });

  it("says for every row where it comes from and when it was checked, oldest row first", () => {
    for (const [model, rows] of Object.entries(PRICES)) {
      expect(rows.length, model).toBeGreaterThan(0);
      expect(rows[0]?.from, model).toBeUndefined();
      const starts = rows.slice(1).map((row) => row.from ?? "");
      expect(starts, model).toEqual([...starts].sort());
      for (const row of rows) {
        expect(row.source.length, model).toBeGreaterThan(20);
        expect(row.checked, model).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(row.cachedInput, model).toBeLessThanOrEqual(row.input);
      }
    }
  });

  it("bills cached prompt tokens at the cached rate and the rest at input", () => {
    const price = { input: 1, cachedInput: 0.1, output: 4, source: "test", checked: "2026-12-03" };
    const usage = { promptTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 500_000 };
    expect(costOf({ ...usage, thoughtsTokens: 0, toolUseTokens: 0 }, price)).toBeCloseTo(
      0.6 + 0.04 + 2,
      10,
    );
  });
});
