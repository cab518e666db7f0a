import { describe, expect, it } from "vitest";
import type { SearchHit } from "../../src/session/store.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { createSearchHistoryTool, MATCH_TEXT_MAX_CHARS } from "../../src/tools/search-history.js";
import { errorOf, outputOf } from "./temp-dir.js";

function setup(found: SearchHit[]) {
  const calls: Array<[string, string, number]> = [];
  const registry = createToolRegistry([
    createSearchHistoryTool({
      search: async (chatId, query, limit) => {
        calls.push([chatId, query, limit]);
        return found;
      },
    }),
  ]);
  const search = (args: unknown) => registry.execute("search_history", args, { chatId: "-77" });
  return { calls, search };
}

const match = (text: string): SearchHit => ({
  id: 3,
  createdAt: "2025-03-05T10:00:00.000Z",
  role: "user",
  text,
});

describe("search_history", () => {
  it("searches this chat with the default limit of 10", async () => {
    const { calls, search } = setup([match("the bike is fixed")]);
    expect(outputOf(await search({ query: "  bike " }))).toEqual({
      matches: [match("the bike is fixed")],
    });
    expect(calls).toEqual([["-77", "bike", 10]]);
  });

  it("passes the limit and clips long texts", async () => {
    const long = "é".repeat(MATCH_TEXT_MAX_CHARS + 100);
    const { calls, search } = setup([{ ...match(long), extra: "dropped" } as SearchHit]);
    const output = outputOf(await search({ query: "é", limit: 50 }));
    expect(output).toEqual({ matches: [match(`${"é".repeat(MATCH_TEXT_MAX_CHARS)}…`)] });
    expect(calls[0]?.[2]).toBe(50);
  });

  it.each([
    [{ query: "x", limit: 0 }, /limit: .*>=1/],
    [{ query: "x", limit: 51 }, /limit: .*<=50/],
    [{ query: "x", limit: 2.5 }, /limit: .*expected int/],
    [{ query: "   " }, /query: /],
    [{}, /query: .*expected string/],
  ])("rejects %j naming the field", async (args, message) => {
    const { calls, search } = setup([]);
    expect(errorOf(await search(args))).toMatch(message);
    expect(calls).toEqual([]);
  });

  it("reports a failing store as an error", async () => {
    const registry = createToolRegistry([
      createSearchHistoryTool({
        search: async () => {
          throw new Error("database is unavailable");
        },
      }),
    ]);
    const outcome = await registry.execute("search_history", { query: "x" }, { chatId: "1" });
    expect(errorOf(outcome)).toBe("database is unavailable");
  });
});
