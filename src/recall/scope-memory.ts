import { scopeName } from "../scope/recall-scope.js";
import {
  countMemoryEntries,
  listMemoryConversations,
  listMemoryDates,
  MEMORY_DATE_PATTERN,
  readMemory,
  removeMemoryEntries,
} from "../session/memory-files.js";
import { scopeKeyOf } from "./area.js";
import { factMatches } from "./profile.js";
import type { Asking } from "./recall.js";

/** The scope's name of a memory folder; undefined for one no conversation of any scope has. */
function scopeOfFolder(conversation: string): string | undefined {
  try {
    return scopeKeyOf(conversation);
  } catch {
    return undefined;
  }
}

const dayKey = (date: string) => {
  const [, dd, mm, yyyy] = MEMORY_DATE_PATTERN.exec(date) ?? [];
  return `${yyyy}${mm}${dd}`;
};

/**
 * The memory files (MEMORY_DIR/<conversation>/dd-mm-yyyy.md) a conversation may read: its own and
 * those of every other conversation of its recall scope, each day's files read as one.
 */
export function scopeMemory(memoryDir: string, asking: Asking) {
  const scope = scopeName(asking.scope);
  /** The asking conversation first, then the others of its scope in a fixed order. */
  async function conversations(): Promise<string[]> {
    const others = (await listMemoryConversations(memoryDir))
      .filter((c) => c !== asking.chatId && scopeOfFolder(c) === scope)
      .sort();
    return [asking.chatId, ...others];
  }
  return {
    /** Days with memory in the scope, oldest first. */
    async dates(): Promise<string[]> {
      const all = new Set<string>();
      for (const c of await conversations()) {
        for (const date of await listMemoryDates(memoryDir, c)) all.add(date);
      }
      return [...all].sort((a, b) => dayKey(a).localeCompare(dayKey(b)));
    },
    /**
     * The day's memory: the asking conversation's as it is written, then each other
     * conversation's under a line naming it; null when the scope has none that day.
     */
    async read(date: string): Promise<string | null> {
      const pieces: string[] = [];
      for (const c of await conversations()) {
        const content = await readMemory(memoryDir, c, date);
        if (content === null) continue;
        pieces.push(c === asking.chatId ? content : `### From conversation ${c}\n${content}`);
      }
      return pieces.length === 0 ? null : pieces.join("");
    },
  };
}

/**
 * The entries of a whole scope's memory files that have all of some words, as /forget matches
 * profile facts: to count them when it asks, and to delete them once confirmed.
 */
export function scopeMemoryEntries(memoryDir: string) {
  async function each(
    scope: string,
    words: string,
    act: typeof countMemoryEntries,
  ): Promise<number> {
    let total = 0;
    for (const conversation of await listMemoryConversations(memoryDir)) {
      if (scopeOfFolder(conversation) !== scope) continue;
      total += await act(memoryDir, conversation, (text) => factMatches(text, words));
    }
    return total;
  }
  return {
    count: (scope: string, words: string) => each(scope, words, countMemoryEntries),
    remove: (scope: string, words: string) => each(scope, words, removeMemoryEntries),
  };
}

export type ScopeMemoryEntries = ReturnType<typeof scopeMemoryEntries>;
