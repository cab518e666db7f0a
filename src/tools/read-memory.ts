import { z } from "zod";
import { scopeMemory } from "../recall/scope-memory.js";
import { MEMORY_DATE_PATTERN } from "../session/memory-files.js";
import { defineTool } from "./registry.js";

export const READ_MEMORY_MAX_CHARS = 64 * 1024;

const schema = z.object({
  date: z
    .string()
    .regex(MEMORY_DATE_PATTERN, "expected a date written dd-mm-yyyy, e.g. 05-03-2025")
    .optional()
    .describe("Day to read, written dd-mm-yyyy; omit it for the most recent memories"),
});

interface MemoryFile {
  date: string;
  content: string;
}

/** The end of a file is its newest part, so that is what survives clipping. */
function keepEnd(content: string, maxChars: number): string {
  return content.length <= maxChars ? content : content.slice(content.length - maxChars);
}

async function readRecent(
  memory: ReturnType<typeof scopeMemory>,
  datesNewestFirst: string[],
  maxChars: number,
): Promise<{ files: MemoryFile[]; truncated: boolean }> {
  const files: MemoryFile[] = [];
  let room = maxChars;
  for (const date of datesNewestFirst) {
    const content = (await memory.read(date)) ?? "";
    if (content.length > room) {
      if (room > 0) files.push({ date, content: keepEnd(content, room) });
      return { files, truncated: true };
    }
    files.push({ date, content });
    room -= content.length;
  }
  return { files, truncated: false };
}

export function createReadMemoryTool(deps: { memoryDir: string; maxChars?: number }) {
  const maxChars = deps.maxChars ?? READ_MEMORY_MAX_CHARS;
  return defineTool({
    name: "read_memory",
    description:
      "Reads this chat's memory: summaries of earlier conversation, one file per day, with " +
      "those of the same person's other private conversations (or the same group's). With a " +
      "date (dd-mm-yyyy) reads that day; without, lists the days and returns the most recent " +
      `memories, newest first, up to ${maxChars} characters.`,
    schema,
    async run(args, ctx) {
      const memory = scopeMemory(deps.memoryDir, ctx);
      const dates = (await memory.dates()).reverse();
      if (args.date !== undefined) {
        const content = await memory.read(args.date);
        if (content === null) {
          const available = dates.length > 0 ? dates.join(", ") : "none yet";
          throw new Error(`no memory for ${args.date}; days with memory: ${available}`);
        }
        const clipped = keepEnd(content, maxChars);
        return { date: args.date, content: clipped, truncated: content.length > maxChars };
      }
      if (dates.length === 0) {
        return { dates, files: [], note: "There is no memory for this chat yet." };
      }
      return { dates, ...(await readRecent(memory, dates, maxChars)) };
    },
  });
}
