import { describe, expect, it } from "vitest";
import { FRESH_START_NOTE } from "../../src/recall/fresh-start.js";
import { eventText, SEARCH_HISTORY_TOOL, truncate } from "../../src/session/event-text.js";

describe("derived texts of an event", () => {
  it("estimates tokens from everything sent, and searches only what users see", () => {
    const big = "y".repeat(5_000);
    const { estimatedTokens, searchText } = eventText({
      v: 1,
      event_type: "session",
      role: "model",
      parts: [
        { kind: "text", text: "private reasoning", thought: true },
        { kind: "text", text: "Hello\0World" },
        { kind: "function_call", name: "read_file", args: { path: "A.md" } },
        {
          kind: "function_response",
          name: "read_file",
          response: { output: big },
          call: { name: "read_file", args: {} },
        },
      ],
    });
    const chars =
      "private reasoning".length +
      "Hello\0World".length +
      "read_file".length +
      '{"path":"A.md"}'.length +
      "read_file".length +
      JSON.stringify({ output: big }).length;
    expect(estimatedTokens).toBe(Math.ceil(chars / 4));
    const lines = searchText.split("\n");
    expect(lines.slice(0, 2)).toEqual(["Hello\uFFFDWorld", 'read_file {"path":"A.md"}']);
    expect(lines[2]).toHaveLength("read_file ".length + 2_000);
    expect(searchText).not.toContain("private");
  });

  it("counts a history search's tokens but does not make it searchable", () => {
    const { estimatedTokens, searchText } = eventText({
      v: 1,
      event_type: "session",
      role: "model",
      parts: [
        { kind: "text", text: "Let me look." },
        { kind: "function_call", name: SEARCH_HISTORY_TOOL, args: { query: "bike" } },
      ],
    });
    expect(searchText).toBe("Let me look.");
    expect(estimatedTokens).toBe(
      Math.ceil(
        ("Let me look.".length + SEARCH_HISTORY_TOOL.length + '{"query":"bike"}'.length) / 4,
      ),
    );
  });

  it("reads a summary's parts the same way", () => {
    expect(
      eventText({
        v: 1,
        event_type: "compaction",
        summary: [{ kind: "text", text: "Ab" }],
        summarized_events: 4,
      }),
    ).toEqual({ estimatedTokens: 1, searchText: "Ab" });
  });

  it("leaves /new's note to the model out of what searches find", () => {
    const fresh = eventText({
      v: 1,
      event_type: "compaction",
      summary: [{ kind: "text", text: FRESH_START_NOTE }],
      summarized_events: 4,
    });
    expect(fresh.searchText).toBe("");
    expect(fresh.estimatedTokens).toBeGreaterThan(10);
  });

  it("truncates with an ellipsis and never splits a surrogate pair", () => {
    expect(truncate("abc", 3)).toBe("abc");
    expect(truncate("abcd", 3)).toBe("abc…");
    // "a😀b": the emoji is two UTF-16 units; cutting after 2 would keep half of it.
    expect(truncate("a😀b", 2)).toBe("a…");
    expect(truncate("a😀b", 3)).toBe("a😀…");
  });
});
