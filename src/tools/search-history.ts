import { z } from "zod";
import { SEARCH_HISTORY_TOOL, truncate } from "../session/event-text.js";
import type { SearchHit } from "../session/store.js";
import { defineTool } from "./registry.js";

/** Full-text search over one chat's stored history; the session store provides it. */
export type SearchHistory = (chatId: string, query: string, limit: number) => Promise<SearchHit[]>;

export const MATCH_TEXT_MAX_CHARS = 500;

const schema = z.object({
  query: z.string().trim().min(1).describe("Words to look for in this chat's past messages"),
  limit: z
    .number()
    .int()
    .min(1)
    .max(50)
    .optional()
    .describe("How many matches to return, 1 to 50 (default 10)"),
});

export function createSearchHistoryTool(deps: { search: SearchHistory }) {
  return defineTool({
    name: SEARCH_HISTORY_TOOL,
    description:
      "Full-text search over this chat's whole stored history, including parts already " +
      "compacted into summaries. Returns matching messages with their id, time and role.",
    schema,
    async run(args, ctx) {
      const found = await deps.search(ctx.chatId, args.query, args.limit ?? 10);
      return {
        matches: found.map(({ id, createdAt, role, text }) => ({
          id,
          createdAt,
          role,
          text: truncate(text, MATCH_TEXT_MAX_CHARS),
        })),
      };
    },
  });
}
