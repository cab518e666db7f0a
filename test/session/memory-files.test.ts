import { mkdir, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  appendMemory,
  countMemoryEntries,
  listMemoryDates,
  memoryDate,
  moveMemory,
  readMemory,
  removeMemoryEntries,
} from "../../src/session/memory-files.js";
import { useTempDir } from "../tools/temp-dir.js";

// Local-time constructors keep the expectations independent of the machine's time zone.
const at = (day: number, hours: number, minutes: number) => new Date(2025, 2, day, hours, minutes);

describe("memory files", () => {
  const memoryDir = useTempDir("memory");

  it("formats dates as dd-mm-yyyy in local time", () => {
    expect(memoryDate(new Date(2025, 0, 7, 23, 59))).toBe("07-01-2025");
    expect(memoryDate(new Date(1999, 11, 31, 0, 0))).toBe("31-12-1999");
  });

  it("appends [HH:MM]: text to <chat>/<dd-mm-yyyy>.md and returns the path", async () => {
    const file = await appendMemory({
      memoryDir: memoryDir(),
      chatId: "-1001234",
      at: at(5, 9, 3),
      text: "talked about the trip",
    });
    expect(file).toBe(path.join(memoryDir(), "-1001234", "05-03-2025.md"));
    expect(await readFile(file, "utf8")).toBe("[09:03]: talked about the trip\n\n");
  });

  it("files an entry under its day and time in TIME_ZONE, whatever the host's zone", async () => {
    // 20:00 in London is 05:00 the next day in Tokyo.
    const file = await appendMemory({
      memoryDir: memoryDir(),
      chatId: "77",
      at: new Date("2026-12-05T20:00:00Z"),
      text: "planned the trip",
      timeZone: "Asia/Tokyo",
    });
    expect(file).toBe(path.join(memoryDir(), "77", "06-12-2026.md"));
    expect(await readFile(file, "utf8")).toBe("[05:00]: planned the trip\n\n");
  });

  it("is append-only: a second entry keeps the first", async () => {
    const dir = memoryDir();
    await appendMemory({ memoryDir: dir, chatId: "42", at: at(5, 9, 3), text: "first" });
    await appendMemory({ memoryDir: dir, chatId: "42", at: at(5, 18, 45), text: "second" });
    expect(await readMemory(dir, "42", "05-03-2025")).toBe("[09:03]: first\n\n[18:45]: second\n\n");
  });

  it("keeps paragraphs of one entry on their own lines but in one block", async () => {
    const dir = memoryDir();
    const text = "  Summary:\r\n\r\n- bought milk  \n\n\n- fixed the bike\n";
    await appendMemory({ memoryDir: dir, chatId: "local", at: at(5, 7, 0), text });
    expect(await readMemory(dir, "local", "05-03-2025")).toBe(
      "[07:00]: Summary:\n- bought milk\n- fixed the bike\n\n",
    );
  });

  it("refuses empty text instead of writing an empty entry", async () => {
    const dir = memoryDir();
    await expect(
      appendMemory({ memoryDir: dir, chatId: "1", at: at(5, 7, 0), text: " \n\n " }),
    ).rejects.toThrow(/empty/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("keeps one folder per chat", async () => {
    const dir = memoryDir();
    await appendMemory({ memoryDir: dir, chatId: "1", at: at(5, 7, 0), text: "one" });
    await appendMemory({ memoryDir: dir, chatId: "2", at: at(5, 7, 0), text: "two" });
    expect((await readdir(dir)).sort()).toEqual(["1", "2"]);
    expect(await readMemory(dir, "1", "05-03-2025")).toBe("[07:00]: one\n\n");
    expect(await readMemory(dir, "2", "05-03-2025")).toBe("[07:00]: two\n\n");
  });

  it("moves a conversation's memory to another, merging days both have", async () => {
    const dir = memoryDir();
    await appendMemory({ memoryDir: dir, chatId: "-42", at: at(5, 7, 0), text: "old day 5" });
    await appendMemory({ memoryDir: dir, chatId: "-42", at: at(6, 7, 0), text: "old day 6" });
    expect(await moveMemory(dir, "-42", "-10042")).toBe(2);
    expect(await readdir(dir)).toEqual(["-10042"]);
    await appendMemory({ memoryDir: dir, chatId: "-43", at: at(5, 6, 0), text: "other" });
    expect(await moveMemory(dir, "-43", "-10042")).toBe(1);
    expect(await readMemory(dir, "-10042", "05-03-2025")).toBe(
      "[07:00]: old day 5\n\n[06:00]: other\n\n",
    );
    expect(await listMemoryDates(dir, "-43")).toEqual([]);
    expect(await moveMemory(dir, "-43", "-10042")).toBe(0);
  });

  it("deletes the entries a match takes, by their text without the stamp, and a file left empty", async () => {
    const dir = memoryDir();
    await appendMemory({ memoryDir: dir, chatId: "5", at: at(5, 7, 0), text: "met Ana\nat 7" });
    await appendMemory({ memoryDir: dir, chatId: "5", at: at(5, 8, 0), text: "booked a train" });
    await appendMemory({ memoryDir: dir, chatId: "5", at: at(6, 7, 0), text: "Ana called" });
    const has = (word: string) => (text: string) => text.toLowerCase().split(/\W+/).includes(word);
    expect(await countMemoryEntries(dir, "5", has("ana"))).toBe(2);
    // "07" is in every stamp, in no text.
    expect(await removeMemoryEntries(dir, "5", has("07"))).toBe(0);
    expect(await removeMemoryEntries(dir, "5", has("ana"))).toBe(2);
    expect(await readMemory(dir, "5", "05-03-2025")).toBe("[08:00]: booked a train\n\n");
    expect(await listMemoryDates(dir, "5")).toEqual(["05-03-2025"]);
    expect(await readdir(path.join(dir, "5"))).toEqual(["05-03-2025.md"]);
  });

  it("keeps each topic's memory in a folder of its own, apart from its chat's", async () => {
    const dir = memoryDir();
    await appendMemory({ memoryDir: dir, chatId: "-1001234", at: at(5, 7, 0), text: "general" });
    await appendMemory({ memoryDir: dir, chatId: "-1001234:77", at: at(5, 7, 0), text: "topic" });
    expect((await readdir(dir)).sort()).toEqual(["-1001234", "-1001234:77"]);
    expect(await readMemory(dir, "-1001234:77", "05-03-2025")).toBe("[07:00]: topic\n\n");
    expect(await readMemory(dir, "-1001234", "05-03-2025")).toBe("[07:00]: general\n\n");
  });

  it.each(["../x", "..", "a/b", "a\\b", ".", "", "x".repeat(65), "1.5"])(
    "rejects the chat id %j so nothing lands outside MEMORY_DIR",
    async (chatId) => {
      // One level down, so that "<dir>/../x" is still inside this test's own temporary folder.
      const dir = path.join(memoryDir(), "memory");
      await mkdir(dir);
      await expect(
        appendMemory({ memoryDir: dir, chatId, at: at(5, 7, 0), text: "x" }),
      ).rejects.toThrow(/invalid chat id/);
      await expect(listMemoryDates(dir, chatId)).rejects.toThrow(/invalid chat id/);
      expect(await readdir(dir)).toEqual([]);
      await expect(stat(path.join(dir, "..", "x"))).rejects.toThrow();
    },
  );

  it("lists dates oldest first, across months and years, ignoring other files", async () => {
    const dir = memoryDir();
    for (const day of [new Date(2025, 0, 2), new Date(2024, 11, 31), new Date(2025, 0, 1)]) {
      await appendMemory({ memoryDir: dir, chatId: "7", at: day, text: "x" });
    }
    await appendMemory({ memoryDir: dir, chatId: "8", at: new Date(2026, 0, 1), text: "x" });
    expect(await listMemoryDates(dir, "7")).toEqual(["31-12-2024", "01-01-2025", "02-01-2025"]);
  });

  it("returns no dates and null content for a chat without memory", async () => {
    expect(await listMemoryDates(memoryDir(), "9")).toEqual([]);
    expect(await readMemory(memoryDir(), "9", "01-01-2025")).toBeNull();
  });

  it("rejects a malformed date", async () => {
    await expect(readMemory(memoryDir(), "9", "2025-01-01")).rejects.toThrow(/dd-mm-yyyy/);
    await expect(readMemory(memoryDir(), "9", "../../etc/passwd")).rejects.toThrow(/dd-mm-yyyy/);
  });
});
