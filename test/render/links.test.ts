import type { RichBlock, RichText } from "grammy/types";
import { describe, expect, it } from "vitest";
import { htmlToPlainText } from "../../src/render/chunk.js";
import { renderMarkdown } from "../../src/render/markdown-html.js";
import { renderRichMessages } from "../../src/render/rich/render.js";
import { PLAIN_STYLES, renderLine } from "../../src/terminal/markdown.js";
import { validateTelegramHtml } from "../fakes/telegram-html.js";
import { validateRichHtml } from "../fakes/telegram-rich.js";

/** What a user sees of an answer: its text, and each link's text and where it goes. */
interface Shown {
  readonly text: string;
  readonly links: readonly { readonly text: string; readonly url: string }[];
}

function fromHtml(html: string): Shown {
  const parsed = validateTelegramHtml(html);
  if (!parsed.ok) throw new Error(`Telegram would refuse ${html}: ${parsed.reason}`);
  const links = parsed.entities.flatMap((entity) =>
    entity.type === "text_link"
      ? [{ text: parsed.text.slice(entity.offset, entity.offset + entity.length), url: entity.url }]
      : [],
  );
  return { text: parsed.text, links };
}

function richLinks(rich: RichText | undefined): Shown["links"] {
  if (rich === undefined || typeof rich === "string") return [];
  if (Array.isArray(rich)) return rich.flatMap(richLinks);
  if (rich.type === "url") return [{ text: plainRich(rich.text), url: rich.url }];
  if (rich.type === "email_address") {
    return [{ text: plainRich(rich.text), url: `mailto:${rich.email_address}` }];
  }
  return "text" in rich ? richLinks(rich.text) : [];
}

function plainRich(rich: RichText | undefined): string {
  if (rich === undefined) return "";
  if (typeof rich === "string") return rich;
  if (Array.isArray(rich)) return rich.map(plainRich).join("");
  return "text" in rich ? plainRich(rich.text) : "";
}

function blockLinks(block: RichBlock): Shown["links"] {
  return "text" in block ? richLinks(block.text) : [];
}

/** The same answer through every renderer Telegram sees: rich, its HTML stand-in, HTML, plain. */
function everyRenderer(markdown: string): Record<string, Shown> {
  const [chunk, ...more] = renderRichMessages(markdown);
  if (chunk === undefined || more.length > 0) throw new Error("expected one rich message");
  const rich = validateRichHtml(chunk.html);
  if (!rich.ok) throw new Error(`Telegram would refuse ${chunk.html}: ${rich.reason}`);
  const html = renderMarkdown(markdown);
  return {
    rich: { text: rich.text, links: rich.blocks.flatMap(blockLinks) },
    "rich's HTML stand-in": fromHtml(chunk.fallbackHtml),
    html: fromHtml(html),
    "plain text": { text: htmlToPlainText(html), links: [] },
  };
}

function expectEverywhere(markdown: string, text: string, links: Shown["links"]): void {
  for (const [renderer, shown] of Object.entries(everyRenderer(markdown))) {
    expect(shown.text, renderer).toBe(text);
    expect(shown.links, renderer).toEqual(renderer === "plain text" ? [] : links);
  }
}

describe("links that lie: every renderer", () => {
  it.each([
    ["[Use this proxy](tg://proxy?server=1.2.3.4&port=443&secret=ee00)", "Use this proxy"],
    ["[Log in](tg://login?token=AQID)", "Log in"],
    ["[the channel](tg://resolve?domain=evil&start=x)", "the channel"],
    ["[Telegram](tg://user?id=777000)", "Telegram"],
    ["[file](ftp://host/f)", "file"],
    ["<tg://resolve?domain=evil>", "tg://resolve?domain=evil"],
    ["![a cat](tg://photo?id=1)", "a cat"],
  ])("%s: any scheme but http, https and mailto is its text, unlinked", (markdown, text) => {
    expectEverywhere(markdown, text, []);
  });

  it.each([
    ["[https://bank.example](https://evil.example/login)", "https://bank.example"],
    ["[bank.example](https://evil.example/login)", "bank.example"],
    ["[Log in at **bank.example** now](https://evil.example/login)", "Log in at bank.example now"],
    ["[https://bank.example/login](https://bank.example.evil.example/login)", null],
    // A zero-width space, or a full stop a URL reads as a dot, hides nothing.
    ["[bank\u200b.example](https://evil.example/login)", "bank\u200b.example"],
    ["[bank\u3002example](https://evil.example/login)", "bank\u3002example"],
    ["[help@bank.example](https://evil.example/login)", "help@bank.example"],
  ])("%s: the text, unlinked, then the real target", (markdown, text) => {
    const target = /\]\((\S+)\)$/.exec(markdown)?.[1] ?? "";
    const shown = text ?? /^\[(.*)\]/.exec(markdown)?.[1] ?? "";
    expectEverywhere(markdown, `${shown} (${target})`, [{ text: target, url: target }]);
  });

  it.each([
    [
      "<https://bank.example@evil.example/login>",
      "https://bank.example@evil.example/login (https://evil.example/login)",
    ],
    [
      "[https://bank.example](https://bank.example@evil.example/login)",
      "https://bank.example (https://evil.example/login)",
    ],
    [
      "[https://bank.example/login](https://bank.example:pw@evil.example/login)",
      "https://bank.example/login (https://evil.example/login)",
    ],
  ])(
    "%s: a host hidden behind a user name is shown, and the link goes without the user name",
    (markdown, text) => {
      expectEverywhere(markdown, text, [
        { text: "https://evil.example/login", url: "https://evil.example/login" },
      ]);
    },
  );

  it.each([
    [
      "[the bank](https://bank.example@evil.example/login)",
      "the bank",
      "https://evil.example/login",
    ],
    ["[ ](https://bank.example@evil.example/)", "https://evil.example/", "https://evil.example/"],
  ])("%s: a link with a user name before its host goes without it", (markdown, text, url) => {
    expectEverywhere(markdown, text, [{ text, url }]);
  });

  it("shows a look-alike domain's real, ASCII address", () => {
    // The "а" of the target is Cyrillic: markdown-it gives the address as punycode.
    const [shown] = Object.values(everyRenderer("[bank.example](https://bаnk.example/)"));
    expect(shown?.links).toEqual([
      { text: "https://xn--bnk-6cd.example/", url: "https://xn--bnk-6cd.example/" },
    ]);
  });

  it("shows a mail link's real address when its text names another", () => {
    expectEverywhere(
      "[help@bank.example](mailto:thief@evil.example)",
      "help@bank.example (mailto:thief@evil.example)",
      [{ text: "mailto:thief@evil.example", url: "mailto:thief@evil.example" }],
    );
  });

  it.each([
    ["[the docs](https://evil.example/docs)", "the docs", "https://evil.example/docs"],
    [
      "[https://example.com/a](https://example.com/b)",
      "https://example.com/a",
      "https://example.com/b",
    ],
    ["[example.com](https://www.example.com/x)", "example.com", "https://www.example.com/x"],
    ["[EXAMPLE.com docs](https://example.com)", "EXAMPLE.com docs", "https://example.com"],
    ["[write to a@b.example](mailto:a@b.example)", "write to a@b.example", "mailto:a@b.example"],
    ["<https://example.com/x>", "https://example.com/x", "https://example.com/x"],
    ["![a cat](https://example.com/cat.png)", "a cat", "https://example.com/cat.png"],
    ["[ ](https://example.com/)", "https://example.com/", "https://example.com/"],
  ])(
    "%s: a link whose text names its own target, or no address, stays as written",
    (markdown, text, url) => {
      expectEverywhere(markdown, text, [{ text, url }]);
    },
  );

  it("the terminal shows Markdown links as written, their target in view", () => {
    const line = "[https://bank.example](https://evil.example/login)";
    expect(renderLine(line, PLAIN_STYLES, { inCode: false })).toBe(line);
  });
});
