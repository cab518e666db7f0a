import { describe, expect, it } from "vitest";
import { ANSI_STYLES, PLAIN_STYLES, renderLine } from "../../src/terminal/markdown.js";

const render = (lines: string[], styles = PLAIN_STYLES) => {
  const state = { inCode: false };
  return lines.map((line) => renderLine(line, styles, state));
};

describe("terminal Markdown", () => {
  it("drops the markup a pipe cannot show, and keeps code literal", () => {
    expect(
      render([
        "# Title",
        "Some **bold**, *italic*, `a**b*c` and __more__.",
        "- first",
        "  * nested",
        "> quoted",
        "```ts",
        "const x = **y**;",
        "```",
        "2 * 3 * 4 stays",
      ]),
    ).toEqual([
      "Title",
      "Some bold, italic, a**b*c and more.",
      "• first",
      "  • nested",
      "│ quoted",
      "```ts",
      "const x = **y**;",
      "```",
      "2 * 3 * 4 stays",
    ]);
  });

  it("styles bold, code and headings with ANSI on a terminal", () => {
    expect(render(["**b** `c`", "## h"], ANSI_STYLES)).toEqual([
      "\x1b[1mb\x1b[22m \x1b[36mc\x1b[39m",
      "\x1b[1mh\x1b[22m",
    ]);
  });
});
