import { describe, expect, it } from "vitest";
import {
  type CacheEntry,
  type ContextCache,
  createContextCache,
  memoryOf,
} from "../../src/session/context-cache.js";

const entry = (bytes: number): CacheEntry => ({
  summary: undefined,
  events: [],
  lastId: 0,
  own: new Set(),
  bytes,
});

const held = (cache: ContextCache, chats: readonly string[]) =>
  chats.filter((chat) => cache.get(chat) !== undefined);

describe("the context cache", () => {
  it("drops the least recently used chats once their bytes pass the budget", () => {
    const cache = createContextCache(300);
    cache.set("a", entry(100));
    cache.set("b", entry(100));
    cache.set("c", entry(100));
    expect(cache.get("a")).toBeDefined();
    cache.set("d", entry(100));
    expect(held(cache, ["a", "b", "c", "d"])).toEqual(["a", "c", "d"]);
  });

  it("counts a chat's bytes once when it is set again, and frees them when it is deleted", () => {
    const cache = createContextCache(300);
    cache.set("a", entry(100));
    cache.set("a", entry(150));
    cache.set("b", entry(150));
    expect(held(cache, ["a", "b"])).toEqual(["a", "b"]);
    cache.delete("a");
    cache.set("c", entry(150));
    expect(held(cache, ["a", "b", "c"])).toEqual(["b", "c"]);
  });

  it("keeps one context larger than the whole budget beside the others, the latest such one", () => {
    const cache = createContextCache(300);
    cache.set("a", entry(100));
    cache.set("big", entry(1_000));
    cache.set("b", entry(100));
    expect(held(cache, ["a", "b", "big"])).toEqual(["a", "b", "big"]);
    cache.set("bigger", entry(2_000));
    expect(held(cache, ["a", "b", "big", "bigger"])).toEqual(["a", "b", "bigger"]);
    // Compacted below the budget, it takes its place among the others.
    cache.set("bigger", entry(100));
    expect(held(cache, ["a", "b", "bigger"])).toEqual(["a", "b", "bigger"]);
    cache.delete("bigger");
    expect(held(cache, ["bigger"])).toEqual([]);
  });

  it("keeps an empty context", () => {
    const cache = createContextCache(300);
    cache.set("empty", entry(0));
    expect(held(cache, ["empty"])).toEqual(["empty"]);
  });

  it("weighs an event by its text: a 256 KiB tool result as much as hundreds of short ones", () => {
    const short = memoryOf([{ estimatedTokens: 100 }]);
    const file = memoryOf([{ estimatedTokens: (256 * 1024) / 4 }]);
    expect(short).toBe(400 + 800);
    expect(file / short).toBeGreaterThan(400);
  });
});
