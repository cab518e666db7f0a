import { z } from "zod";
import type { SearchHit, SearchOptions } from "../recall/keyword-search.js";
import type { Asking } from "../recall/recall.js";
import { SEARCH_HISTORY_TOOL } from "../session/event-text.js";
import { defineTool } from "./registry.js";

/** Search over what the asking conversation may recall (src/recall/ provides it). */
export type SearchHistory = (
  asking: Asking,
  query: string,
  options: SearchOptions,
  signal?: AbortSignal,
) => Promise<SearchHit[]>;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A date (a whole day, in UTC) or an ISO date-time. `until` a day means to the end of that day.
 */
const instant = (bound: "since" | "until") =>
  z
    .string()
    .trim()
    .refine(
      (value) => (DAY.test(value) || value.includes("T")) && !Number.isNaN(Date.parse(value)),
      {
        message: "expected a date (2026-11-30) or an ISO date-time (2026-11-30T14:00:00Z)",
      },
    )
    .transform((value) => {
      const at = new Date(value);
      if (bound === "until" && DAY.test(value)) at.setUTCDate(at.getUTCDate() + 1);
      return at.toISOString();
    });

const schema = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .describe(
      'Words to look for, all of which must appear (whole words, any case); "exact phrase" in double quotes; word* for any word that starts so (zebra* finds zebras)',
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .max(50)
    .optional()
    .describe("How many matches to return, 1 to 50 (default 10)"),
  since: instant("since")
    .optional()
    .describe("Only messages from this date (YYYY-MM-DD, UTC) or ISO date-time on"),
  until: instant("until")
    .optional()
    .describe(
      "Only messages up to this date (YYYY-MM-DD, inclusive, UTC) or before this ISO date-time",
    ),
});

export function createSearchHistoryTool(deps: { search: SearchHistory }) {
  return defineTool({
    name: SEARCH_HISTORY_TOOL,
    description:
      "Ranked full-text search over everything stored that this chat may recall: its own earlier " +
      "history beyond what you see now, including parts compacted into summaries, tool calls and " +
      "results, and the other conversations of the same person in private (other topics, " +
      "before /new), or of the same group. Best matches first (an exact phrase above scattered " +
      "words), newer first among equals; each with its id, time, role and a short snippet " +
      "around the hit.",
    schema,
    async run(args, ctx) {
      const found = await deps.search(
        { chatId: ctx.chatId, scope: ctx.scope },
        args.query,
        { limit: args.limit ?? 10, since: args.since, until: args.until },
        ctx.signal,
      );
      return {
        matches: found.map(({ id, createdAt, role, snippet }) => ({
          id,
          createdAt,
          role,
          snippet,
        })),
      };
    },
  });
}
