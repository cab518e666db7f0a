import {
  appendFile,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { DateTime } from "luxon";

/**
 * Per-conversation memory files: MEMORY_DIR/<conversation key>/dd-mm-yyyy.md, one file per local
 * day (see src/scope/conversation-key.ts).
 *
 * Entry format: `[HH:MM]: <text>` followed by a blank line. Paragraphs inside the text stay on
 * their own lines, but blank lines inside it are removed, so every entry is one contiguous block
 * and the blank line alone separates entries. Files are appended to, and rewritten only to drop
 * entries a /forget asked to delete.
 */

export const MEMORY_DATE_PATTERN = /^(\d{2})-(\d{2})-(\d{4})$/;

// Conversation keys are Telegram chat ids (negative for groups), with ":<thread id>" for a topic;
// the terminal chat is "local". Anything without dots or separators cannot climb out of MEMORY_DIR.
const CHAT_ID_PATTERN = /^[A-Za-z0-9_:-]{1,64}$/;

/** The day `at` falls on in `timeZone` (TIME_ZONE; the host's when not given), as the file's name. */
export function memoryDate(at: Date, timeZone?: string): string {
  return DateTime.fromJSDate(at, { zone: timeZone ?? "system" }).toFormat("dd-MM-yyyy");
}

function memoryTime(at: Date, timeZone: string | undefined): string {
  return DateTime.fromJSDate(at, { zone: timeZone ?? "system" }).toFormat("HH:mm");
}

function chatMemoryDir(memoryDir: string, chatId: string): string {
  if (!CHAT_ID_PATTERN.test(chatId)) {
    throw new Error(
      `invalid chat id ${JSON.stringify(chatId)} for a memory folder: expected a conversation key ` +
        `(a chat id, with ":<topic id>" for a topic) or a name of letters, digits, "_" and "-" such as "local"`,
    );
  }
  return path.join(memoryDir, chatId);
}

function assertMemoryDate(date: string): void {
  if (!MEMORY_DATE_PATTERN.test(date)) {
    throw new Error(`invalid memory date ${JSON.stringify(date)}: use dd-mm-yyyy, e.g. 05-03-2025`);
  }
}

function formatEntry(at: Date, text: string, timeZone: string | undefined): string {
  const block = text
    .replace(/\r\n?/g, "\n")
    .trim()
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line !== "")
    .join("\n");
  if (block === "") {
    throw new Error("memory text is empty: there is nothing to append");
  }
  return `[${memoryTime(at, timeZone)}]: ${block}\n\n`;
}

export async function appendMemory(options: {
  memoryDir: string;
  chatId: string;
  at: Date;
  text: string;
  /** TIME_ZONE: the day and time the entry is filed under. */
  timeZone?: string | undefined;
}): Promise<string> {
  const dir = chatMemoryDir(options.memoryDir, options.chatId);
  const entry = formatEntry(options.at, options.text, options.timeZone);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${memoryDate(options.at, options.timeZone)}.md`);
  await appendFile(file, entry, "utf8");
  return file;
}

function sortKey(date: string): string {
  const [, dd, mm, yyyy] = MEMORY_DATE_PATTERN.exec(date) ?? [];
  return `${yyyy}${mm}${dd}`;
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}

/** The conversations that have a memory folder. */
export async function listMemoryConversations(memoryDir: string): Promise<string[]> {
  try {
    const entries = await readdir(memoryDir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && CHAT_ID_PATTERN.test(e.name))
      .map((e) => e.name);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/** Dates (dd-mm-yyyy) that have a memory file for this chat, oldest first. */
export async function listMemoryDates(memoryDir: string, chatId: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(chatMemoryDir(memoryDir, chatId));
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  return names
    .filter((name) => name.endsWith(".md"))
    .map((name) => name.slice(0, -".md".length))
    .filter((date) => MEMORY_DATE_PATTERN.test(date))
    .sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
}

/** The memory file's content for that date, or null when there is none. */
export async function readMemory(
  memoryDir: string,
  chatId: string,
  date: string,
): Promise<string | null> {
  assertMemoryDate(date);
  try {
    return await readFile(path.join(chatMemoryDir(memoryDir, chatId), `${date}.md`), "utf8");
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * Gives one conversation's memory files to another (a group that became a supergroup): each day's
 * entries are appended to the new conversation's file of that day, then the old folder goes.
 * Returns how many files moved.
 */
export async function moveMemory(memoryDir: string, from: string, to: string): Promise<number> {
  const source = chatMemoryDir(memoryDir, from);
  const target = chatMemoryDir(memoryDir, to);
  const dates = await listMemoryDates(memoryDir, from);
  if (dates.length === 0) return 0;
  try {
    // The usual case, and atomic: the new conversation has no memory yet.
    await rename(source, target);
    return dates.length;
  } catch (error) {
    const code = error instanceof Error && "code" in error ? error.code : undefined;
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
  }
  for (const date of dates) {
    const content = await readFile(path.join(source, `${date}.md`), "utf8");
    await appendFile(path.join(target, `${date}.md`), content, "utf8");
  }
  await rm(source, { recursive: true, force: true });
  return dates.length;
}

/** A memory file's entries, each without its `[HH:MM]: ` stamp (see formatEntry). */
const ENTRY_STAMP = /^\[\d{2}:\d{2}\]: /;
const entriesOf = (content: string) => content.split(/\n{2,}/).filter((e) => e.trim() !== "");
const textOf = (entry: string) => entry.replace(ENTRY_STAMP, "");

/** How many entries of a conversation's memory files `matches` takes. */
export async function countMemoryEntries(
  memoryDir: string,
  chatId: string,
  matches: (text: string) => boolean,
): Promise<number> {
  let count = 0;
  for (const date of await listMemoryDates(memoryDir, chatId)) {
    const content = (await readMemory(memoryDir, chatId, date)) ?? "";
    count += entriesOf(content).filter((e) => matches(textOf(e))).length;
  }
  return count;
}

/**
 * Deletes the entries of a conversation's memory files that `matches` takes (a /forget); a file
 * left without entries goes. Returns how many went.
 */
export async function removeMemoryEntries(
  memoryDir: string,
  chatId: string,
  matches: (text: string) => boolean,
): Promise<number> {
  const dir = chatMemoryDir(memoryDir, chatId);
  let removed = 0;
  for (const date of await listMemoryDates(memoryDir, chatId)) {
    const file = path.join(dir, `${date}.md`);
    for (;;) {
      const content = await readFile(file, "utf8");
      const entries = entriesOf(content);
      const kept = entries.filter((e) => !matches(textOf(e)));
      if (kept.length === entries.length) break;
      const temporary = `${file}.forget`;
      if (kept.length > 0) await writeFile(temporary, kept.map((e) => `${e}\n\n`).join(""), "utf8");
      // A summary appended meanwhile (a compaction of another conversation of the scope) would
      // go with the old content: then the file is read again.
      if ((await stat(file)).size !== Buffer.byteLength(content)) {
        await rm(temporary, { force: true });
        continue;
      }
      await (kept.length > 0 ? rename(temporary, file) : rm(file));
      removed += entries.length - kept.length;
      break;
    }
  }
  return removed;
}
