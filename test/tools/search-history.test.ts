import { describe, expect, it } from "vitest";
import type { SearchHit, SearchOptions } from "../../src/recall/keyword-search.js";
import type { Asking } from "../../src/recall/recall.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { createSearchHistoryTool } from "../../src/tools/search-history.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, outputOf } from "./temp-dir.js";

function setup(found: SearchHit[]) {
  const calls: Array<[Asking, string, SearchOptions]> = [];
  const registry = createToolRegistry([
    createSearchHistoryTool({
      search: async (asking, query, options) => {
        calls.push([asking, query, options]);
        return found;
      },
    }),
  ]);
  const search = (args: unknown) => registry.execute("search_history", args, toolContext("-77:5"));
  return { calls, search };
}

const match = (snippet: string): SearchHit => ({
  id: 3,
  createdAt: "2025-03-05T10:00:00.000Z",
  role: "user",
  snippet,
});

describe("search_history", () => {
  it("searches from this conversation, in its scope, with the default limit of 10", async () => {
    const { calls, search } = setup([match("the bike is fixed")]);
    expect(outputOf(await search({ query: "  bike " }))).toEqual({
      matches: [match("the bike is fixed")],
    });
    expect(calls).toEqual([
      [{ chatId: "-77:5", scope: { kind: "group", chatId: -77 } }, "bike", { limit: 10 }],
    ]);
  });

  it("passes the limit and the dates, a day's until meaning to its end", async () => {
    const { calls, search } = setup([{ ...match("x"), extra: "dropped" } as SearchHit]);
    const output = outputOf(
      await search({ query: "x", limit: 50, since: "2026-11-30", until: "2026-12-01" }),
    );
    expect(output).toEqual({ matches: [match("x")] });
    expect(calls[0]?.[2]).toEqual({
      limit: 50,
      since: "2026-11-30T00:00:00.000Z",
      until: "2026-12-02T00:00:00.000Z",
    });
    await search({ query: "x", until: "2026-12-01T15:30:00+01:00" });
    expect(calls[1]?.[2].until).toBe("2026-12-01T14:30:00.000Z");
  });

  it.each([
    [{ query: "x", limit: 0 }, /limit: .*>=1/],
    [{ query: "x", limit: 51 }, /limit: .*<=50/],
    [{ query: "x", limit: 2.5 }, /limit: .*expected int/],
    [{ query: "x", since: "yesterday" }, /since: .*expected a date/],
    [{ query: "x", until: "2026-13-45" }, /until: .*expected a date/],
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
    const outcome = await registry.execute("search_history", { query: "x" }, toolContext("1"));
    expect(errorOf(outcome)).toBe("database is unavailable");
  });
});
