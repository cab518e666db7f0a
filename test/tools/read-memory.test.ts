import { describe, expect, it } from "vitest";
import { appendMemory } from "../../src/session/memory-files.js";
import { createReadMemoryTool } from "../../src/tools/read-memory.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, outputOf, useTempDir } from "./temp-dir.js";

describe("read_memory", () => {
  const memoryDir = useTempDir("read-memory");
  const read = (args: unknown, maxChars?: number) =>
    createToolRegistry([createReadMemoryTool({ memoryDir: memoryDir(), maxChars })]).execute(
      "read_memory",
      args,
      toolContext("5"),
    );
  const remember = (day: number, text: string, chatId = "5") =>
    appendMemory({ memoryDir: memoryDir(), chatId, at: new Date(2025, 2, day, 8, 30), text });

  it("says there is no memory yet", async () => {
    expect(outputOf(await read({}))).toEqual({
      dates: [],
      files: [],
      note: "There is no memory for this chat yet.",
    });
  });

  it("returns the most recent days first, with the list of all days", async () => {
    await remember(3, "third");
    await remember(11, "eleventh");
    await remember(4, "other chat", "6");
    expect(outputOf(await read({}))).toEqual({
      dates: ["11-03-2025", "03-03-2025"],
      files: [
        { date: "11-03-2025", content: "[08:30]: eleventh\n\n" },
        { date: "03-03-2025", content: "[08:30]: third\n\n" },
      ],
      truncated: false,
    });
  });

  it("reads the other conversations of its scope, each under its name, never another scope's", async () => {
    await remember(3, "own");
    await remember(3, "in a topic", "5:9");
    await remember(4, "in a group", "-5");
    await remember(4, "another user's", "55");
    await remember(4, "the terminal's", "local");
    expect(outputOf(await read({}))).toEqual({
      dates: ["03-03-2025"],
      files: [
        {
          date: "03-03-2025",
          content: "[08:30]: own\n\n### From conversation 5:9\n[08:30]: in a topic\n\n",
        },
      ],
      truncated: false,
    });
    expect(errorOf(await read({ date: "04-03-2025" }))).toMatch(/^no memory for 04-03-2025/);
  });

  it("stops at the cap, keeping the newest part of the last file it fits", async () => {
    await remember(1, "old old old");
    await remember(2, "newest");
    const newest = "[08:30]: newest\n\n";
    const room = newest.length + 5;
    expect(outputOf(await read({}, room))).toEqual({
      dates: ["02-03-2025", "01-03-2025"],
      files: [
        { date: "02-03-2025", content: newest },
        { date: "01-03-2025", content: "old\n\n" },
      ],
      truncated: true,
    });
  });

  it("reads one day", async () => {
    await remember(3, "third");
    expect(outputOf(await read({ date: "03-03-2025" }))).toEqual({
      date: "03-03-2025",
      content: "[08:30]: third\n\n",
      truncated: false,
    });
  });

  it("tells which days exist when the asked one has no memory", async () => {
    await remember(3, "third");
    expect(errorOf(await read({ date: "04-03-2025" }))).toBe(
      "no memory for 04-03-2025; days with memory: 03-03-2025",
    );
  });

  it.each(["2025-03-03", "3-3-2025", "../../etc/passwd"])(
    "explains the date format when given %j",
    async (date) => {
      expect(errorOf(await read({ date }))).toMatch(/date: .*dd-mm-yyyy, e\.g\. 05-03-2025/);
    },
  );
});
