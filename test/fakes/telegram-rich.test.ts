import { type Api, Bot, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";

let fake: FakeTelegram;
let api: Api;

beforeEach(async () => {
  fake = await startFakeTelegram();
  api = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } }).api;
});

afterEach(async () => {
  await fake.close();
});

async function refusal(html: string): Promise<string> {
  const error = await api.sendRichMessage(7, { html }).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof GrammyError)) throw new Error(`expected a GrammyError, got ${error}`);
  expect(error.error_code).toBe(400);
  return error.description;
}

const repeat = (n: number, html: string) => html.repeat(n);

describe("fake Telegram: sendRichMessage", () => {
  it("answers valid rich HTML with the Message grammY types, its blocks parsed", async () => {
    const message = await api.sendRichMessage(7, {
      html:
        '<h2>Title &amp; more</h2><p>Hi <b>bold <i>both</i></b>, <a href="https://t.me/">link</a>, <tg-math>x^2</tg-math><br/>line</p>' +
        '<pre><code class="language-python">print(1 &lt; 2)</code></pre><hr/>' +
        '<ol start="3"><li>three</li><li value="7"><p>seven</p><ul><li><input type="checkbox" checked>done</li></ul></li></ol>' +
        "<blockquote><p>quoted</p><cite>Someone</cite></blockquote>" +
        '<table bordered><tr><th>a</th><th align="right">b</th></tr><tr><td>1</td><td align="right">2</td></tr></table>' +
        "<tg-math-block>E = mc^2</tg-math-block>",
    });
    expect(message.chat).toMatchObject({ id: 7, type: "private" });
    expect(message.rich_message.blocks).toEqual([
      { type: "heading", size: 2, text: "Title & more" },
      {
        type: "paragraph",
        text: [
          "Hi ",
          { type: "bold", text: ["bold ", { type: "italic", text: "both" }] },
          ", ",
          { type: "url", text: "link", url: "https://t.me/" },
          ", ",
          { type: "mathematical_expression", expression: "x^2" },
          "\nline",
        ],
      },
      { type: "pre", text: "print(1 < 2)", language: "python" },
      { type: "divider" },
      {
        type: "list",
        items: [
          { label: "3.", blocks: [{ type: "paragraph", text: "three" }] },
          {
            label: "7.",
            value: 7,
            blocks: [
              { type: "paragraph", text: "seven" },
              {
                type: "list",
                items: [
                  {
                    label: "•",
                    blocks: [{ type: "paragraph", text: "done" }],
                    has_checkbox: true,
                    is_checked: true,
                  },
                ],
              },
            ],
          },
        ],
      },
      { type: "blockquote", blocks: [{ type: "paragraph", text: "quoted" }], credit: "Someone" },
      {
        type: "table",
        is_bordered: true,
        cells: [
          [
            { text: "a", is_header: true, align: "left", valign: "top" },
            { text: "b", is_header: true, align: "right", valign: "top" },
          ],
          [
            { text: "1", align: "left", valign: "top" },
            { text: "2", align: "right", valign: "top" },
          ],
        ],
      },
      { type: "mathematical_expression", expression: "E = mc^2" },
    ]);
    expect(fake.sent.at(-1)).toMatchObject({ parse_mode: "rich", message_id: message.message_id });
  });

  it("refuses what the documentation does not allow", async () => {
    expect(await refusal("<div>x</div>")).toMatch(/Unsupported tag "div"/);
    expect(await refusal("<p>a & b</p>")).toMatch(/not part of a supported HTML entity/);
    expect(await refusal("<p>1 < 2</p>")).toMatch(/starts no tag/);
    expect(await refusal("<p>x</b>")).toMatch(/Unmatched end tag/);
    expect(await refusal("<p><b>x</p>")).toMatch(/Unmatched end tag/);
    expect(await refusal('<p class="a">x</p>')).toMatch(/Unsupported attribute "class"/);
    expect(await refusal("<b><p>x</p></b>")).toMatch(/block tag <p> inside inline content/);
    expect(await refusal('<p><code class="language-js">x</code></p>')).toMatch(/standalone code/);
    expect(await refusal('<p><a href="javascript:x">x</a></p>')).toMatch(/Unsupported URL/);
    expect(await refusal('<img src="tg://photo?id=1"/>')).toMatch(/only HTTP and HTTPS/);
    expect(await refusal("<ul>text</ul>")).toMatch(/text directly inside <ul>/);
    expect(await refusal("<p> </p><hr")).toMatch(/starts no tag/);
    expect(await refusal("<p>\u200b</p>")).toMatch(/rich message is empty/);
  });

  it("wants exactly one of html, markdown and blocks, and models only html", async () => {
    const send = (rich: Record<string, unknown>) =>
      api.raw.sendRichMessage({ chat_id: 7, rich_message: rich as { html: string } }).then(
        () => "ok",
        (error: GrammyError) => error.description,
      );
    expect(await send({})).toMatch(/exactly one of html, markdown or blocks/);
    expect(await send({ html: "<p>a</p>", markdown: "a" })).toMatch(/exactly one/);
    expect(await send({ markdown: "**a**" })).toMatch(/models only rich_message.html/);
  });
});

describe("fake Telegram: sendRichMessage limits, at their edges", () => {
  it("32,768 characters, formula source and code included", async () => {
    const text = "a".repeat(32_768 - 3 - 4);
    await api.sendRichMessage(7, {
      html: `<p>${text}</p><pre>bcd</pre><tg-math-block>x^22</tg-math-block>`,
    });
    // Counted in characters, not UTF-16 units: an emoji is one.
    await api.sendRichMessage(7, { html: `<p>${"😀".repeat(32_768)}</p>` });
    expect(
      await refusal(`<p>${text}e</p><pre>bcd</pre><tg-math-block>x^22</tg-math-block>`),
    ).toMatch(/too long: 32769 characters/);
  });

  it("500 blocks, list items and table rows included", async () => {
    // A list of n one-paragraph items is 1 + 2n blocks; a table of r rows is 1 + r.
    const list = (n: number) => `<ul>${repeat(n, "<li>x</li>")}</ul>`;
    const table = (rows: number) => `<table>${repeat(rows, "<tr><td>x</td></tr>")}</table>`;
    await api.sendRichMessage(7, { html: list(200) + table(98) });
    expect(await refusal(list(200) + table(99))).toMatch(/too many blocks: 501/);
  });

  it("16 levels of blocks and formatting together", async () => {
    // Each blockquote is a level, the paragraph one more, each formatting tag one more.
    const nest = (quotes: number, tags: number) =>
      `${repeat(quotes, "<blockquote>")}<p>${repeat(tags, "<b>")}x${repeat(tags, "</b>")}</p>${repeat(quotes, "</blockquote>")}`;
    await api.sendRichMessage(7, { html: nest(10, 5) });
    expect(await refusal(nest(10, 6))).toMatch(/nested too deep: 17 levels/);
    await api.sendRichMessage(7, { html: nest(15, 0) });
    expect(await refusal(nest(16, 0))).toMatch(/nested too deep: 17 levels/);
  });

  it("50 media attachments", async () => {
    const media = (n: number) =>
      `<p>x</p>${repeat(n, '<img src="https://telegram.org/example/photo.jpg"/>')}`;
    await api.sendRichMessage(7, { html: media(50) });
    expect(await refusal(media(51))).toMatch(/too many media: 51/);
  });

  it("20 columns in a table, spans counted", async () => {
    const row = (n: number) => `<table><tr>${repeat(n, "<td>x</td>")}</tr></table>`;
    await api.sendRichMessage(7, { html: row(20) });
    expect(await refusal(row(21))).toMatch(/21 columns/);
    expect(await refusal('<table><tr><td colspan="20">x</td><td>y</td></tr></table>')).toMatch(
      /21 columns/,
    );
  });
});
