import fc from "fast-check";
import type { RichBlock, RichText } from "grammy/types";
import { describe, expect, it } from "vitest";
import { blocksChars } from "../../../src/render/rich/blocks.js";
import { markdownToBlocks } from "../../../src/render/rich/from-markdown.js";
import { blocksToRichHtml } from "../../../src/render/rich/html.js";
import { RICH_BUDGET } from "../../../src/render/rich/limits.js";
import { renderRichMessages } from "../../../src/render/rich/render.js";
import { validateTelegramHtml } from "../../fakes/telegram-html.js";
import { RICH_TEXT_LIMIT, validateRichHtml } from "../../fakes/telegram-rich.js";
import { longMarkdownAnswer, manyBlocksAnswer } from "../../helpers/answers.js";

/** Each message as the fake Telegram parses it; fails the test on one Telegram would refuse. */
function parsed(markdown: string): { blocks: RichBlock[]; text: string }[] {
  return renderRichMessages(markdown).map((chunk) => {
    const result = validateRichHtml(chunk.html);
    if (!result.ok) throw new Error(`refused: ${result.reason}\n${chunk.html.slice(0, 500)}`);
    return result;
  });
}

function only(markdown: string): RichBlock[] {
  const messages = parsed(markdown);
  expect(messages).toHaveLength(1);
  return messages[0]?.blocks ?? [];
}

describe("renderRichMessages: constructs render natively", () => {
  it("renders headings, paragraphs with formatting, and a divider", () => {
    expect(
      only("# Title\n\nSome **bold** and *it* and ~~gone~~ and `x`.\n\n---\n\n### Small"),
    ).toEqual([
      { type: "heading", size: 1, text: "Title" },
      {
        type: "paragraph",
        text: [
          "Some ",
          { type: "bold", text: "bold" },
          " and ",
          { type: "italic", text: "it" },
          " and ",
          { type: "strikethrough", text: "gone" },
          " and ",
          { type: "code", text: "x" },
          ".",
        ],
      },
      { type: "divider" },
      { type: "heading", size: 3, text: "Small" },
    ]);
  });

  it("renders a table with its header and alignment", () => {
    expect(only("| Name | Qty |\n|:--|--:|\n| apples | 3 |\n| **pears** | 10 |")).toEqual([
      {
        type: "table",
        is_bordered: true,
        cells: [
          [
            { text: "Name", is_header: true, align: "left", valign: "top" },
            { text: "Qty", is_header: true, align: "right", valign: "top" },
          ],
          [
            { text: "apples", align: "left", valign: "top" },
            { text: "3", align: "right", valign: "top" },
          ],
          [
            { text: { type: "bold", text: "pears" }, align: "left", valign: "top" },
            { text: "10", align: "right", valign: "top" },
          ],
        ],
      },
    ]);
  });

  it("renders nested lists, numbered from their start, and task items", () => {
    const blocks = only("3. three\n4. four\n   - inner\n     - deeper\n\n- [x] done\n- [ ] to do");
    expect(blocks).toEqual([
      {
        type: "list",
        items: [
          { label: "3.", blocks: [{ type: "paragraph", text: "three" }] },
          {
            label: "4.",
            blocks: [
              { type: "paragraph", text: "four" },
              {
                type: "list",
                items: [
                  {
                    label: "•",
                    blocks: [
                      { type: "paragraph", text: "inner" },
                      {
                        type: "list",
                        items: [{ label: "•", blocks: [{ type: "paragraph", text: "deeper" }] }],
                      },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      },
      {
        type: "list",
        items: [
          {
            label: "•",
            blocks: [{ type: "paragraph", text: "done" }],
            has_checkbox: true,
            is_checked: true,
          },
          { label: "•", blocks: [{ type: "paragraph", text: "to do" }], has_checkbox: true },
        ],
      },
    ]);
  });

  it("renders quotes, nested ones too, and code blocks with their language", () => {
    expect(
      only("> said\n> > before\n\n```python\nif a < b:\n    print('x')\n```\n\n    indented"),
    ).toEqual([
      {
        type: "blockquote",
        blocks: [
          { type: "paragraph", text: "said" },
          { type: "blockquote", blocks: [{ type: "paragraph", text: "before" }] },
        ],
      },
      { type: "pre", text: "if a < b:\n    print('x')", language: "python" },
      { type: "pre", text: "indented" },
    ]);
  });

  it("renders formulas inline and as blocks, in every notation models use", () => {
    const blocks = only(
      "Energy $E = mc^2$ and \\(a_1\\).\n\n$$\n\\frac{a}{b}\n$$\n\n\\[x^2\\]\n\n```math\n\\sum_i i\n```",
    );
    expect(blocks).toEqual([
      {
        type: "paragraph",
        text: [
          "Energy ",
          { type: "mathematical_expression", expression: "E = mc^2" },
          " and ",
          { type: "mathematical_expression", expression: "a_1" },
          ".",
        ],
      },
      { type: "mathematical_expression", expression: "\\frac{a}{b}" },
      { type: "mathematical_expression", expression: "x^2" },
      { type: "mathematical_expression", expression: "\\sum_i i" },
    ]);
  });

  it("keeps links to allowed schemes, and images as links", () => {
    expect(
      only("[site](https://example.com/?a=1&b=2) [bad](javascript:x) ![cat](https://e.com/c.png)"),
    ).toEqual([
      {
        type: "paragraph",
        text: [
          { type: "url", text: "site", url: "https://example.com/?a=1&b=2" },
          // markdown-it refuses the link itself, so it stays as written.
          " [bad](javascript:x) ",
          { type: "url", text: "cat", url: "https://e.com/c.png" },
        ],
      },
    ]);
  });
});

describe("renderRichMessages: text that only looks like markup stays literal", () => {
  it.each([
    ["$5 and $10", "$5 and $10"],
    ["from $5-$10 a day", "from $5-$10 a day"],
    ["$HOME/$PATH", "$HOME/$PATH"],
    ["a==b and ==c==", "a==b and ==c=="],
    ["x || y, ||secret||", "x || y, ||secret||"],
    ["<div>hi</div> & <b>not bold</b>", "<div>hi</div> & <b>not bold</b>"],
    ["&amp; stays &lt;", "& stays <"],
    ["1 < 2 > 0", "1 < 2 > 0"],
    ["a_b_c and snake_case", "a_b_c and snake_case"],
    ["<tg-spoiler>x</tg-spoiler>", "<tg-spoiler>x</tg-spoiler>"],
  ])("%j", (markdown, shown) => {
    expect(only(markdown)).toEqual([{ type: "paragraph", text: shown }]);
  });

  it("keeps escaped square brackets in a sentence as brackets, not a formula", () => {
    const [message] = parsed("As the paper says \\[1\\], arr\\[0\\] holds \\[a-z\\]+ words.");
    expect(message?.text).toBe("As the paper says [1], arr[0] holds [a-z]+ words.");
    expect(JSON.stringify(message?.blocks)).not.toContain("math");
  });

  it("keeps a price-like dollar next to a formula", () => {
    expect(only("pay $5 for $x$")).toEqual([
      {
        type: "paragraph",
        text: ["pay $5 for ", { type: "mathematical_expression", expression: "x" }],
      },
    ]);
  });

  it("keeps a <div> block the model wrote as its text", () => {
    expect(only("<div>\n<p>raw</p>\n</div>")).toEqual([
      { type: "paragraph", text: "<div>\n<p>raw</p>\n</div>" },
    ]);
  });
});

const words = (text: string) =>
  text.replace(/(?<![\p{L}\p{N}])\d+[.)](?=\s|$)/gu, " ").match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * What a user reads, with a word boundary wherever formatting changes. List labels are left out:
 * Markdown renumbers a list ("1. 1." shows 1 and 2), so numbers like them are compared nowhere.
 */
function shown(blocks: readonly RichBlock[]): string {
  const text = (rich: RichText | undefined): string => {
    if (rich === undefined) return "";
    if (typeof rich === "string") return rich;
    if (Array.isArray(rich)) return rich.map(text).join(" ");
    if (rich.type === "mathematical_expression") return ` ${rich.expression} `;
    return "text" in rich ? ` ${text(rich.text)} ` : "";
  };
  return blocks
    .map((block): string => {
      switch (block.type) {
        case "list":
          return block.items.map((item) => shown(item.blocks)).join("\n");
        case "blockquote":
          return shown(block.blocks);
        case "table":
          return block.cells.map((row) => row.map((cell) => text(cell.text)).join(" ")).join("\n");
        case "mathematical_expression":
          return block.expression;
        case "paragraph":
        case "heading":
        case "pre":
          return text(block.text);
        default:
          return "";
      }
    })
    .join("\n");
}

/**
 * Levels of nesting in what the fake parsed, counted the stricter way the renderer does: a list
 * item is a level of its own, and so is each formatting nested in text.
 */
function levels(blocks: readonly RichBlock[]): number {
  const inText = (rich: RichText | undefined): number => {
    if (rich === undefined || typeof rich === "string") return 0;
    if (Array.isArray(rich)) return Math.max(0, ...rich.map(inText));
    return 1 + ("text" in rich ? inText(rich.text) : 0);
  };
  const block = (b: RichBlock): number => {
    switch (b.type) {
      case "list":
        return 2 + Math.max(0, ...b.items.map((item) => levels(item.blocks)));
      case "blockquote":
        return 1 + levels(b.blocks);
      case "paragraph":
      case "heading":
        return 1 + inText(b.text);
      default:
        return 1;
    }
  };
  return Math.max(0, ...blocks.map(block));
}

describe("renderRichMessages: limits of one rich message, at their edges", () => {
  it("sends 30,720 characters as one message and 30,721 as two, cut at a word", () => {
    // Telegram's 32,768 less the margin: what the documentation leaves open never gets it refused.
    expect(RICH_BUDGET.chars).toBe(30_720);
    const exact = `${"word ".repeat(6143)}abcde`;
    expect(exact.length).toBe(30_720);
    expect(parsed(exact).map((m) => m.text.length)).toEqual([30_720]);
    const messages = parsed(`${exact}f`);
    expect(messages).toHaveLength(2);
    expect(messages.map((m) => m.text).join("")).toBe(`${exact}f`);
    expect(messages[1]?.text).toBe("abcdef");
  });

  it("shows an inline formula longer than a message as its source, cut over messages", () => {
    const row = Array.from({ length: 100 }, (_, i) => (i === 0 ? "1" : "0")).join(" & ");
    const matrix = Array.from({ length: 100 }, () => row).join(" \\\\ ");
    for (const [open, close] of [
      ["\\(", "\\)"],
      ["$$", "$$"],
    ] as const) {
      const messages = parsed(
        `Here it is: ${open}\\begin{pmatrix} ${matrix} \\end{pmatrix}${close} done.`,
      );
      expect(messages.length).toBeGreaterThan(1);
      const shown = messages.map((m) => m.text).join("");
      expect(shown).toContain("Here it is:");
      expect(shown.replace(/\s/g, "")).toContain(matrix.replace(/\s/g, ""));
      expect(shown).toContain("done.");
    }
  });

  it("takes no leading space past a part that a formula filled to the last character", () => {
    // 22 + 22 + 23 + 22 = 89 characters fill the part; the next text begins with a space.
    const input = "日本beta<div> alphaalpha$$ ".repeat(5);
    const chunks = renderRichMessages(input, { chars: 89, blocks: 6 });
    const lengths = chunks.map((chunk) => {
      const result = validateRichHtml(chunk.html);
      if (!result.ok) throw new Error(result.reason);
      return result.text.length;
    });
    expect(lengths[0]).toBe(89);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(89);
  });

  it("counts the line breaks between blocks: a 40,000-character answer of short blocks fits two messages", () => {
    const answer = manyBlocksAnswer(40_000);
    // Telegram refused the first of such an answer's messages: 32,939 characters by its count.
    const messages = parsed(answer);
    expect(messages).toHaveLength(2);
    for (const message of messages)
      expect(message.text.length).toBeLessThanOrEqual(RICH_TEXT_LIMIT);
    expect(words(messages.map((m) => m.text).join("\n"))).toEqual(words(answer));
  });

  it("sends 500 blocks as one message and 501 as two, split between blocks", () => {
    // A list of n items of one paragraph is 1 + 2n blocks.
    const list = (n: number) => Array.from({ length: n }, (_, i) => `- item ${i}`).join("\n");
    const fits = `intro\n\n${list(249)}`; // 1 + 1 + 498 = 500
    expect(parsed(fits)).toHaveLength(1);
    const over = parsed(`intro\n\nmore\n\n${list(249)}`);
    expect(over).toHaveLength(2);
    expect(words(over.map((m) => m.text).join(" "))).toEqual(words(`intro more ${list(249)}`));
  });

  it("splits a list too long for one message between its items, numbers going on", () => {
    const list = Array.from({ length: 400 }, (_, i) => `${i + 1}. item`).join("\n");
    const messages = parsed(list);
    expect(messages).toHaveLength(2);
    const labels = messages.flatMap((m) =>
      m.blocks.flatMap((block) =>
        block.type === "list" ? block.items.map((item) => item.label) : [],
      ),
    );
    expect(labels).toEqual(Array.from({ length: 400 }, (_, i) => `${i + 1}.`));
  });

  it("splits a table too long for one message between rows, with the header in each part", () => {
    const rows = Array.from({ length: 600 }, (_, i) => `| r${i} | v${i} |`).join("\n");
    const messages = parsed(`| key | value |\n|---|---|\n${rows}`);
    expect(messages.length).toBeGreaterThan(1);
    for (const message of messages) {
      const [table] = message.blocks;
      expect(table?.type === "table" && table.cells[0]?.[0]?.text).toBe("key");
    }
    const shown = messages.flatMap((m) =>
      m.blocks.flatMap((b) => (b.type === "table" ? b.cells.slice(1) : [])),
    );
    expect(shown.map((row) => row[0]?.text)).toEqual(
      Array.from({ length: 600 }, (_, i) => `r${i}`),
    );
  });

  it("renders 20 columns as a table and 21 as written, no cell lost", () => {
    const table = (n: number) => {
      const cells = Array.from({ length: n }, (_, i) => `c${i}`);
      return `| ${cells.join(" | ")} |\n|${" --- |".repeat(n)}\n| ${cells.join(" | ")} |`;
    };
    expect(only(table(20))[0]?.type).toBe("table");
    const wide = only(table(21));
    expect(wide[0]?.type).toBe("pre");
    expect(words(parsed(table(21))[0]?.text ?? "")).toEqual(words(table(21)));
  });

  it("keeps nesting within 16 levels: deep lists and quotes flatten, words kept", () => {
    const deepList = Array.from({ length: 9 }, (_, i) => `${"  ".repeat(i)}- level **${i}**`).join(
      "\n",
    );
    const deepQuote = `${Array.from({ length: 18 }, () => ">").join(" ")} deep *words*`;
    for (const markdown of [deepList, deepQuote, `${deepQuote}\n\n${deepList}`]) {
      const messages = parsed(markdown);
      expect(words(messages.map((m) => m.text).join(" "))).toEqual(words(markdown));
    }
  });

  it("keeps 16 levels of nesting as written, and flattens only the level past them", () => {
    const quoted = (n: number) => `${"> ".repeat(n)}deep *words*`;
    const listed = (n: number) =>
      Array.from({ length: n }, (_, i) => `${"  ".repeat(i)}- item **${i}**`).join("\n");
    // 14 quotes, the paragraph and its italics; 7 lists of an item each, the paragraph, bold.
    for (const atLimit of [quoted(14), listed(7)]) {
      const blocks = only(atLimit);
      expect(levels(blocks)).toBe(16);
      expect(renderRichMessages(atLimit)[0]?.html).toMatch(/<(i|b)>(words|6)<\/\1>/);
    }
    // One level more: the italics become text, then the innermost quote a paragraph.
    expect(renderRichMessages(quoted(15))[0]?.html).toBe(
      `${"<blockquote>".repeat(15)}<p>deep words</p>${"</blockquote>".repeat(15)}`,
    );
    expect(renderRichMessages(quoted(16))).toEqual(renderRichMessages(quoted(15)));
    for (const past of [quoted(15), quoted(16), listed(8)]) {
      const blocks = only(past);
      expect(levels(blocks)).toBe(16);
      expect(words(shown(blocks))).toEqual(words(past));
    }
  });

  it("carries no media: an image stays a link, however many there are", () => {
    const images = Array.from({ length: 60 }, (_, i) => `![p${i}](https://e.com/${i}.png)`).join(
      "\n\n",
    );
    const messages = parsed(images);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.blocks.every((block) => block.type === "paragraph")).toBe(true);
  });

  it("sends a 10,000-character answer with a table and code as one valid rich message", () => {
    const answer = longMarkdownAnswer();
    expect(answer.length).toBeGreaterThanOrEqual(10_000);
    const [message, ...rest] = parsed(answer);
    expect(rest).toEqual([]);
    const types = message?.blocks.map((block) => block.type) ?? [];
    expect(types).toContain("table");
    expect(message?.blocks.find((block) => block.type === "pre")).toMatchObject({ language: "ts" });
    expect(words(message?.text ?? "")).toEqual(words(answer.replace(/```ts/, "")));
  });

  it("shows nothing for an answer with nothing to show", () => {
    expect(renderRichMessages("")).toEqual([]);
    expect(renderRichMessages("\u200b\n\n```\n```")).toEqual([]);
  });
});

describe("renderRichMessages: every message valid, every word kept in order", () => {
  const piece = fc.oneof(
    fc.constantFrom("alpha", "beta", "gamma", "42", "x1", "état", "日本"),
    fc.constantFrom(
      " ",
      " ",
      "\n",
      "\n\n",
      "**",
      "*",
      "_",
      "~~",
      "`",
      "$",
      "$$",
      "\\",
      "|",
      "# ",
      "> ",
      "- ",
      "1. item ",
      "==",
      "||",
      "<div>",
      "</b>",
      "---",
      "- [ ] ",
      "    ",
      "\n| a | b |\n|---|--:|\n| c ",
    ),
  );
  const markdown = fc.array(piece, { maxLength: 80 }).map((parts) => parts.join(""));

  it("for arbitrary Markdown-like text", () => {
    fc.assert(
      fc.property(markdown, (input) => {
        // A fence's info string is a language, not shown text.
        fc.pre(!/```|~~~/.test(input));
        const messages = parsed(input);
        expect(words(messages.map((m) => shown(m.blocks)).join(" "))).toEqual(words(input));
      }),
      { numRuns: 400 },
    );
  });

  it("counts a message's characters exactly as the fake Telegram does", () => {
    fc.assert(
      fc.property(markdown, (input) => {
        const blocks = markdownToBlocks(input).map(({ block }) => block);
        const result = validateRichHtml(blocksToRichHtml(blocks));
        fc.pre(result.ok);
        expect(result.ok && result.text.length).toBe(blocksChars(blocks));
      }),
      { numRuns: 400 },
    );
  });

  it("for long inputs split under small budgets", () => {
    fc.assert(
      fc.property(
        markdown,
        fc.integer({ min: 40, max: 400 }),
        fc.integer({ min: 6, max: 40 }),
        (input, chars, blocks) => {
          // Code blocks, fenced or indented, are cut anywhere under a small budget: a cut list
          // label in one ("42421." as "4" and "2421.") is no longer left out by words(). Asked of
          // the text repeated: "~~a\n\n~~" five times holds "~~~~a", a fence whose "a" names the
          // language and is not shown.
          const text = input.repeat(5);
          fc.pre(!/```|~~~|^( {4}|\t)/m.test(text));
          const chunks = renderRichMessages(text, { chars, blocks });
          const texts = chunks.map((chunk) => {
            const result = validateRichHtml(chunk.html);
            if (!result.ok) throw new Error(result.reason);
            // The fake counts as Telegram does: UTF-16 units, line breaks between blocks too.
            expect(result.text.length).toBeLessThanOrEqual(chars);
            const fallback = validateTelegramHtml(chunk.fallbackHtml);
            expect(fallback.ok).toBe(true);
            return shown(result.blocks);
          });
          // A word longer than the budget is cut: its letters still all arrive, in order. (Each
          // part of a table split in two shows its header again.)
          if (!input.includes("|---|")) {
            expect(words(texts.join(" ")).join("")).toBe(words(text).join(""));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
