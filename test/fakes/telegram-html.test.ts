import { describe, expect, it } from "vitest";
import { validateTelegramHtml } from "./telegram-html.js";

describe("validateTelegramHtml", () => {
  it("decodes the entities Telegram knows and counts text without tags", () => {
    const result = validateTelegramHtml("&lt;&gt;&amp;&quot;&#65;&#x1F600; <i>x</i>");
    expect(result).toEqual({
      ok: true,
      text: '<>&"A😀 x',
      entities: [{ type: "italic", offset: 8, length: 1 }],
    });
  });

  it("accepts every supported tag with its attributes", () => {
    const html = [
      "<b>b</b><strong>b</strong><i>i</i><em>i</em><u>u</u><ins>u</ins>",
      "<s>s</s><strike>s</strike><del>s</del>",
      '<span class="tg-spoiler">x</span><tg-spoiler>x</tg-spoiler>',
      "<a href='tg://user?id=1'>m</a><code>c</code><pre>p</pre>",
      "<blockquote>q</blockquote><blockquote expandable>q</blockquote>",
      '<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>',
      '<tg-time unix="1647531900" format="wDT">t</tg-time>',
    ].join("");
    const result = validateTelegramHtml(html);
    expect(result.ok).toBe(true);
    expect(result.ok && result.entities.map((e) => e.type)).toEqual([
      "bold",
      "bold",
      "italic",
      "italic",
      "underline",
      "underline",
      "strikethrough",
      "strikethrough",
      "strikethrough",
      "spoiler",
      "spoiler",
      "text_link",
      "code",
      "pre",
      "blockquote",
      "expandable_blockquote",
      "custom_emoji",
      "date_time",
    ]);
  });

  it.each([
    ["<br>", 'Unsupported start tag "br" at byte offset 0'],
    ["é<b", "Unclosed start tag at byte offset 2"],
    ["<b>x</b", "Unclosed end tag at byte offset 4"],
    ['<span class="x">y</span>', 'Tag "span" must have class "tg-spoiler"'],
    ['<code class="x">y</code>', 'only "language-…" is supported'],
    ['<a href="">x</a>', 'Tag "a" must have a non-empty attribute "href"'],
    ['<a href="x&y">x</a>', 'Character "&"'],
    ["&#xD800;", 'Character "&"'],
    ["&lt", 'Character "&"'],
  ])("rejects %s", (html, reason) => {
    const result = validateTelegramHtml(html);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain(reason);
  });
});
