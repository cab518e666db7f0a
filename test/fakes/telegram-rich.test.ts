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
  it("32,768 characters, formula source, code and the line breaks between blocks included", async () => {
    // Three blocks: two line breaks between them count as characters too.
    const text = "a".repeat(32_768 - 3 - 4 - 2);
    const html = (paragraph: string) =>
      `<p>${paragraph}</p><pre>bcd</pre><tg-math-block>x^22</tg-math-block>`;
    await api.sendRichMessage(7, { html: html(text) });
    expect(await refusal(html(`${text}e`))).toMatch(/too long: 32769 characters/);
    // Counted in UTF-16 units: an emoji outside the BMP is two.
    await api.sendRichMessage(7, { html: `<p>${"😀".repeat(16_384)}</p>` });
    expect(await refusal(`<p>${"😀".repeat(16_384)}e</p>`)).toMatch(/too long: 32769/);
  });

  it("counts a line break between list items, table rows and cells, and nested blocks", async () => {
    // The text Telegram counts against the limit: what the message shows, a break between blocks.
    const html =
      "<ul><li>aaaaa</li><li>bbbbb</li></ul>" +
      "<table><tr><td>ccc</td><td>ddd</td></tr><tr><td>eee</td></tr></table>" +
      "<blockquote><p>ff</p><p>gg</p></blockquote><p>h</p>";
    const message = await api.sendRichMessage(7, { html });
    const sent = fake.sent.at(-1);
    expect(message.message_id).toBe(sent?.message_id);
    expect(sent?.plain_text).toBe("aaaaa\nbbbbb\nccc ddd\neee\nff\ngg\nh");
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

describe("fake Telegram: sendRichMessageDraft", () => {
  const draftRefusal = (chatId: number, html: string, draftId = 7) =>
    api.sendRichMessageDraft(chatId, draftId, { html }).then(
      () => "ok",
      (error: GrammyError) => `${error.error_code} ${error.description}`,
    );

  it("shows a rich draft in a private chat, parsed as sendRichMessage parses it", async () => {
    expect(
      await api.sendRichMessageDraft(
        42,
        7,
        { html: "<h2>Title</h2><p>Hel</p>" },
        { can_stop: true },
      ),
    ).toBe(true);
    expect(fake.drafts).toEqual([
      {
        chat_id: 42,
        draft_id: 7,
        plain_text: "Title\nHel",
        rich_html: "<h2>Title</h2><p>Hel</p>",
        at: expect.any(Number),
      },
    ]);
    expect(fake.sent).toEqual([]);
  });

  it("refuses groups, a zero draft id, what sendRichMessage refuses, and media to fetch", async () => {
    expect(await draftRefusal(-100123, "<p>x</p>")).toMatch(/^400 .*only to private chats/);
    expect(await draftRefusal(42, "<p>x</p>", 0)).toMatch(/^400 .*draft_id/);
    expect(await draftRefusal(42, "<div>x</div>")).toMatch(/^400 .*Unsupported tag "div"/);
    expect(await draftRefusal(42, `<p>${"a".repeat(32_769)}</p>`)).toMatch(/too long: 32769/);
    expect(await draftRefusal(42, '<p>x</p><img src="https://telegram.org/a.jpg"/>')).toMatch(
      /^400 .*media by URL/,
    );
    // At the edge: as long as a rich message may be, far beyond a text draft's 4096.
    expect(await draftRefusal(42, `<p>${"a".repeat(32_768)}</p>`)).toBe("ok");
  });

  it("shares the per-chat draft rate with sendMessageDraft: the sixth in a second is a 429", async () => {
    for (let i = 0; i < 3; i++) await api.sendMessageDraft(42, 7, `x${i}`);
    await api.sendRichMessageDraft(42, 7, { html: "<p>y</p>" });
    await api.sendRichMessageDraft(42, 7, { html: "<p>z</p>" });
    const limited = await api.sendRichMessageDraft(42, 7, { html: "<p>w</p>" }).then(
      () => undefined,
      (error: GrammyError) => error,
    );
    expect(limited?.error_code).toBe(429);
    expect(limited?.parameters.retry_after).toBe(1);
    expect(await api.sendMessageDraft(43, 7, "another chat")).toBe(true);
  });
});

describe("fake Telegram: editMessageText with rich_message", () => {
  it("makes a text message rich, validated as sendRichMessage is, and says when nothing changed", async () => {
    const sent = await api.sendMessage(42, "partial <b>answer</b>", { parse_mode: "HTML" });
    const edited = await api.editMessageText(42, sent.message_id, {
      html: "<h1>Answer</h1><table><tr><td>1</td></tr></table>",
    });
    expect(edited).toMatchObject({
      message_id: sent.message_id,
      rich_message: { blocks: [{ type: "heading" }, { type: "table" }] },
    });
    expect(edited).not.toHaveProperty("text");
    expect(fake.sent.map((m) => [m.parse_mode, m.plain_text])).toEqual([["rich", "Answer\n1"]]);
    const again = (html: string) =>
      api.editMessageText(42, sent.message_id, { html }).then(
        () => "ok",
        (error: GrammyError) => error.description,
      );
    expect(await again("<h1>Answer</h1><table><tr><td>1</td></tr></table>")).toMatch(
      /message is not modified/,
    );
    expect(await again("<h1>Answer</h1><div>x</div>")).toMatch(/can't parse rich message/);
    expect(await again(`<p>${"a".repeat(32_769)}</p>`)).toMatch(/too long/);
    expect(await again("<h1>Answer</h1><p>more</p>")).toBe("ok");
    // And back to text.
    await api.editMessageText(42, sent.message_id, "plain again");
    expect(fake.sent.map((m) => [m.parse_mode, m.plain_text])).toEqual([
      [undefined, "plain again"],
    ]);
    expect(fake.edits).toHaveLength(3);
  });

  it("wants exactly one of text and rich_message", async () => {
    const sent = await api.sendMessage(42, "x");
    const both = await api.raw
      .editMessageText({
        chat_id: 42,
        message_id: sent.message_id,
        text: "y",
        rich_message: { html: "<p>y</p>" },
      })
      .then(
        () => "ok",
        (error: GrammyError) => error.description,
      );
    expect(both).toMatch(/exactly one of text or rich_message/);
  });
});
