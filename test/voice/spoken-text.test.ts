import { describe, expect, it } from "vitest";
import { MAX_PART_CHARS, speechParts, spokenText } from "../../src/voice/spoken-text.js";

describe("spokenText", () => {
  it("reads the words and names what only shows on screen", () => {
    const answer = [
      "## Steps",
      "",
      "1. Run `npm ci` first.",
      "- Read **the [guide](https://example.com/guide)** and _then_ https://example.com/x.",
      "",
      "```ts",
      "const x = 1;",
      "```",
      "",
      "| a | b |",
      "|---|---|",
      "| 1 | 2 |",
      "",
      "> Quoted ![a chart](chart.png) and `a very long inline snippet of code that goes on`.",
    ].join("\n");
    expect(spokenText(answer)).toBe(
      [
        "Steps",
        "",
        "Run npm ci first.",
        "Read the guide and then a link.",
        "",
        "(The code is in the message.)",
        "",
        "(The table is in the message.)",
        "",
        "Quoted a chart and some code.",
      ].join("\n"),
    );
  });

  it("keeps inline code and snake_case as written, and drops only the marks around them", () => {
    expect(spokenText("Set `max_tool_calls` in **`config.ts`**, and keep snake_case_names.")).toBe(
      "Set max_tool_calls in config.ts, and keep snake_case_names.",
    );
    expect(spokenText("It is _really_ __that__ simple.")).toBe("It is really that simple.");
  });

  it("an unclosed code block runs to the end and is named once", () => {
    expect(spokenText("Look:\n```\nline 1\nline 2")).toBe("Look:\n(The code is in the message.)");
  });
});

describe("speechParts", () => {
  it("keeps a short answer whole", () => {
    expect(speechParts("One sentence. Two.")).toEqual(["One sentence. Two."]);
  });

  it("cuts at sentence ends, never inside a word, each part within the limit", () => {
    const sentence = "This sentence has exactly a few words in it. ";
    const text = sentence.repeat(80);
    const parts = speechParts(text);
    expect(parts.length).toBeGreaterThan(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(MAX_PART_CHARS);
      expect(part.endsWith("in it.")).toBe(true);
    }
    expect(parts.join(" ")).toBe(text.trim());
  });

  it("cuts Chinese and Japanese at their sentence ends, not in the middle of a sentence", () => {
    const sentence = "今日はとても良い天気ですね。";
    const text = sentence.repeat(100);
    const parts = speechParts(text, 100);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(100);
      expect(part.endsWith("。")).toBe(true);
    }
    expect(parts.join("")).toBe(text);
  });

  it("cuts a sentence longer than a part at spaces, and a word longer than a part inside it", () => {
    const long = `${"word ".repeat(60)}${"x".repeat(25)}`;
    const parts = speechParts(long, 40);
    expect(parts.every((p) => p.length <= 40)).toBe(true);
    expect(parts.join(" ").replace(/\s+/g, " ")).toBe(long.replace(/\s+/g, " ").trim());
  });
});
