import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { htmlToPlainText, splitMessage, TELEGRAM_MESSAGE_LIMIT } from "../../src/render/chunk.js";
import { escapeHtml, renderMarkdown } from "../../src/render/markdown-html.js";
import { validateTelegramHtml } from "../fakes/telegram-html.js";

/** The text Telegram would show, failing the test if Telegram would reject the HTML. */
function telegramText(html: string): string {
  const result = validateTelegramHtml(html);
  if (!result.ok)
    throw new Error(`Telegram would reject ${JSON.stringify(html)}: ${result.reason}`);
  return result.text;
}

/** Renders and checks the output is HTML Telegram accepts. */
function render(markdown: string): string {
  const html = renderMarkdown(markdown);
  telegramText(html);
  return html;
}

function withoutWhitespace(text: string): string {
  return text.replace(/\s+/g, "");
}

describe("renderMarkdown", () => {
  it("renders inline formatting", () => {
    expect(render("**bold** *it* _it_ ~~gone~~ `x = 1`")).toBe(
      "<b>bold</b> <i>it</i> <i>it</i> <s>gone</s> <code>x = 1</code>",
    );
    expect(render("***both***")).toBe("<i><b>both</b></i>");
  });

  it("renders fenced and indented code blocks, with a class only when a language is given", () => {
    expect(render("```ts\nconst a = 1;\n```")).toBe(
      '<pre><code class="language-ts">const a = 1;</code></pre>',
    );
    expect(render("```\nplain\n```")).toBe("<pre><code>plain</code></pre>");
    expect(render("    indented\n      more")).toBe("<pre><code>indented\n  more</code></pre>");
  });

  it("escapes &, < and > in text and in code", () => {
    expect(render("1 < 2 && 3 > 2")).toBe("1 &lt; 2 &amp;&amp; 3 &gt; 2");
    expect(render("`a<b>&c`")).toBe("<code>a&lt;b&gt;&amp;c</code>");
    expect(render('```html\n<p class="x">&amp;</p>\n```')).toBe(
      '<pre><code class="language-html">&lt;p class="x"&gt;&amp;amp;&lt;/p&gt;</code></pre>',
    );
  });

  it("escapes raw HTML instead of passing it through", () => {
    expect(render("<b>x</b> <script>alert(1)</script>")).toBe(
      "&lt;b&gt;x&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;",
    );
    expect(render("<div>\nhi\n</div>")).toBe("&lt;div&gt;\nhi\n&lt;/div&gt;");
  });

  it("keeps http, https and mailto links and escapes their href; a tg: link is its text", () => {
    expect(render('[docs](https://example.com/?a=1&b="2")')).toBe(
      '<a href="https://example.com/?a=1&amp;b=%222%22">docs</a>',
    );
    expect(render("[me](tg://user?id=1) [mail](mailto:a@b.c) <https://x.y>")).toBe(
      'me <a href="mailto:a@b.c">mail</a> <a href="https://x.y">https://x.y</a>',
    );
  });

  it("renders links with other schemes as their text", () => {
    expect(render("[file](ftp://host/f) [js](javascript:alert(1))")).toBe(
      "file [js](javascript:alert(1))",
    );
    expect(render("[`code` link](https://x.y)")).toBe('<a href="https://x.y">code link</a>');
  });

  it("renders images as a link to the image, or their alt text", () => {
    expect(render("![a cat](https://x.y/cat.png)")).toBe('<a href="https://x.y/cat.png">a cat</a>');
    expect(render("![](https://x.y/cat.png)")).toBe('<a href="https://x.y/cat.png">image</a>');
    expect(render("[ ](https://x.y)")).toBe('<a href="https://x.y">https://x.y</a>');
    expect(render("![local](./cat.png)")).toBe("local");
  });

  it("renders headings as bold lines and separates paragraphs by a blank line", () => {
    expect(render("# Title\nfirst line\nsecond line\n\nnext *para*")).toBe(
      "<b>Title</b>\n\nfirst line\nsecond line\n\nnext <i>para</i>",
    );
  });

  it("renders bullet and ordered lists, nested lists indented", () => {
    const markdown = "- one\n- two\n  - inner **b**\n    1. deep\n\n3. three\n7. four";
    expect(render(markdown)).toBe(
      ["• one", "• two", "    • inner <b>b</b>", "        1. deep", "", "3. three", "4. four"].join(
        "\n",
      ),
    );
  });

  it("renders blockquotes, flattening nested ones Telegram cannot show", () => {
    expect(render("> said\n> > earlier")).toBe("<blockquote>said\n\nearlier</blockquote>");
  });

  it("renders tables as rows of text and rules as a line", () => {
    expect(render("| a | b |\n|---|---|\n| 1 | **2** |\n\n---\n\nend")).toBe(
      "a | b\n1 | <b>2</b>\n\n———\n\nend",
    );
  });

  it("shows a table as written when a row has more cells than the header, losing no word", () => {
    const table = "| op | meaning |\n|---|---|\n| `a || b` | or |";
    expect(render(`${table}\n\nafter`)).toBe(`<pre>${escapeHtml(table)}</pre>\n\nafter`);
    expect(render("- | a | b |\n  |---|---|\n  | `x|y` | 2 |")).toBe(
      "• <pre>| a | b |\n|---|---|\n| `x|y` | 2 |</pre>",
    );
  });

  it("renders ordinary tables in quotes and lists as rows, whatever markup comes before them", () => {
    expect(render("> a | b\n> --|--\n> | 1 | 2 |")).toBe("<blockquote>a | b\n1 | 2</blockquote>");
    expect(render("1. | a | b |\n   |:--|--:|\n   | 1 | 2 |")).toBe("1. a | b\n    1 | 2");
  });

  it("indents a list item's later paragraphs under its marker, never the code inside them", () => {
    expect(render("- item\n\n  more text\n  still more")).toBe(
      "• item\n    more text\n    still more",
    );
    expect(render("- > ```py\n  > if x:\n  >     y()\n  > ```")).toBe(
      '• <blockquote><pre><code class="language-py">if x:\n    y()</code></pre></blockquote>',
    );
  });

  it("keeps unbalanced markup as literal text", () => {
    expect(render("**bold")).toBe("**bold");
    expect(render("_it and *more")).toBe("_it and *more");
    expect(render("a ` b")).toBe("a ` b");
    expect(render("*a _b* c_")).toBe("<i>a _b</i> c_");
    expect(render("```\nnever closed")).toBe("<pre><code>never closed</code></pre>");
  });

  it("trims trailing whitespace", () => {
    expect(render("hi   \n\n\n")).toBe("hi");
    expect(render("")).toBe("");
  });
});

describe("escapeHtml and htmlToPlainText", () => {
  it("escapes the three characters Telegram requires", () => {
    expect(escapeHtml(`a<b>&"c"`)).toBe(`a&lt;b&gt;&amp;"c"`);
  });

  it("strips tags and decodes entities", () => {
    expect(htmlToPlainText('<b>a &lt; b</b> &amp; <a href="x">c</a> &#128512;')).toBe(
      "a < b & c 😀",
    );
  });

  it("keeps a stray < or & from HTML Telegram rejected", () => {
    expect(htmlToPlainText("1 < 2 & 3 <b>x")).toBe("1 < 2 & 3 x");
  });
});

describe("splitMessage", () => {
  const textOf = (chunks: string[]): string[] => chunks.map(telegramText);

  it("returns short HTML unchanged and nothing for blank HTML", () => {
    expect(splitMessage("<b>hi</b>")).toEqual(["<b>hi</b>"]);
    expect(splitMessage("")).toEqual([]);
    expect(splitMessage(" \n\n ")).toEqual([]);
    // Nothing Telegram would show: zero-width characters count as none.
    expect(splitMessage("<pre><code>\u200b \u200d</code></pre>")).toEqual([]);
  });

  it("prefers paragraph breaks, then line breaks, then spaces", () => {
    const paragraph = "word ".repeat(7).trim();
    expect(textOf(splitMessage(`${paragraph}\n${paragraph}\n\n${paragraph}`, 80))).toEqual([
      `${paragraph}\n${paragraph}`,
      paragraph,
    ]);
    expect(textOf(splitMessage(`${paragraph} ${paragraph}\n${paragraph}`, 80))).toEqual([
      `${paragraph} ${paragraph}`,
      paragraph,
    ]);
    expect(textOf(splitMessage("aaaa bbbb cccc dddd", 10))).toEqual(["aaaa bbbb", "cccc dddd"]);
  });

  it("splits hard only when there is no break", () => {
    expect(splitMessage("x".repeat(250), 100)).toEqual([
      "x".repeat(100),
      "x".repeat(100),
      "x".repeat(50),
    ]);
  });

  it("never splits an entity or a surrogate pair", () => {
    const entities = splitMessage("&amp;".repeat(150), 100);
    expect(entities).toEqual(["&amp;".repeat(100), "&amp;".repeat(50)]);

    const emoji = splitMessage("😀".repeat(100), 51);
    expect(textOf(emoji).map((text) => text.length)).toEqual([50, 50, 50, 50]);
    expect(emoji.join("")).toBe("😀".repeat(100));
  });

  it("closes open tags at a split and reopens them with their attributes", () => {
    const code = Array.from({ length: 12 }, (_, i) => `line ${i} &lt;`).join("\n");
    const chunks = splitMessage(
      `<b>Code:</b>\n<pre><code class="language-ts">${code}</code></pre>`,
      40,
    );
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks.slice(1)) {
      expect(chunk.startsWith('<pre><code class="language-ts">')).toBe(true);
      expect(chunk.endsWith("</code></pre>")).toBe(true);
    }
    expect(textOf(chunks).join("\n")).toBe(`Code:\n${code.replaceAll("&lt;", "<")}`);
  });

  it("makes of HTML within the limit what cutting it would, unclosed tags and hidden text included", () => {
    const pieces = fc.constantFrom(
      "<b>",
      "</b>",
      "<i>",
      "</I>",
      '<a href="x<y">',
      "</a>",
      "<pre><code>",
      "</code>",
      "<",
      "< b>",
      ">",
      "&amp;",
      "&lt;",
      "&#8203;",
      "&#x200B;",
      "&#128512;",
      "&#0;",
      "&",
      "\u200b",
      "\u3164",
      " ",
      "\n",
      "x",
      "😀",
    );
    fc.assert(
      fc.property(fc.string({ unit: pieces, maxLength: 30 }), (html) => {
        // With the limit at the text's length (not the HTML's), the HTML is cut into atoms.
        const cut = splitMessage(html, Math.max(2, htmlToPlainText(html).length));
        expect(splitMessage(html)).toEqual(cut);
      }),
      { numRuns: 2_000 },
    );
    expect(splitMessage("<b>x <i>y")).toEqual(["<b>x <i>y</i></b>"]);
    expect(splitMessage("<b>&#8203;</b>")).toEqual([]);
  });

  it("refuses a limit no chunk could meet", () => {
    expect(() => splitMessage("hi", 1)).toThrow(RangeError);
  });

  it("splits a 20,000-character answer with code blocks into valid messages", () => {
    const longCode = Array.from(
      { length: 200 },
      (_, i) => `  const value${i} = compute(${i}) < limit && ok;`,
    );
    const sections = Array.from({ length: 12 }, (_, i) =>
      [
        `## Step ${i}`,
        `Some **explanation** for step ${i} with \`inline <code>\` & a [link](https://example.com/${i}). `.repeat(
          5,
        ),
        "```ts",
        ...Array.from({ length: 15 }, (_, line) => `const x${line} = a < b && c > d; // ${i}`),
        "```",
        "- a point\n- another *point*",
      ].join("\n\n"),
    );
    const markdown = [...sections, "```ts", ...longCode, "```"].join("\n\n");
    expect(markdown.length).toBeGreaterThan(20_000);

    const html = render(markdown);
    const chunks = splitMessage(html);
    const texts = textOf(chunks);

    expect(chunks.length).toBeGreaterThanOrEqual(5);
    for (const text of texts) {
      expect(text.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
      expect(text.trim()).not.toBe("");
    }
    expect(
      chunks.some((chunk) => chunk.startsWith('<pre><code class="language-ts">  const value')),
    ).toBe(true);
    expect(withoutWhitespace(texts.join(""))).toBe(withoutWhitespace(telegramText(html)));
  });
});

describe("rendering and splitting random Markdown-ish text", () => {
  const fragments = [
    "*",
    "**",
    "_",
    "__",
    "`",
    "```",
    "~~",
    "[",
    "](",
    ")",
    "(",
    "https://x.y/a?b=1&c=2",
    "javascript:",
    "!",
    "# ",
    "> ",
    "- ",
    "1. ",
    "  ",
    "    ",
    "\n",
    "\n\n",
    "|",
    "---",
    "<",
    ">",
    "&",
    "&amp;",
    "&#128512;",
    '"',
    "'",
    "\\",
    "word",
    "more words",
    "😀",
    "é",
    "<b>",
    "</b>",
    "<a href=x>",
    "\t",
    "```py\n",
    "| a | b |\n|-|-|\n",
  ];
  const markdownish = fc.string({ unit: fc.constantFrom(...fragments), maxLength: 120 });

  it("always yields valid Telegram HTML and valid chunks within the limit", () => {
    fc.assert(
      fc.property(markdownish, fc.integer({ min: 2, max: 120 }), (markdown, limit) => {
        const html = renderMarkdown(markdown);
        const whole = telegramText(html);
        const texts = splitMessage(html, limit).map(telegramText);
        for (const text of texts) {
          expect(text.length).toBeLessThanOrEqual(limit);
          expect(text.trim()).not.toBe("");
        }
        expect(withoutWhitespace(texts.join(""))).toBe(withoutWhitespace(whole));
      }),
      { numRuns: 400 },
    );
  });
});
