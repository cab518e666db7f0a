import type { Message, RichMessage } from "grammy/types";
import { describe, expect, it } from "vitest";
import { inboundOf } from "../../../src/telegram/inbound/inbound.js";
import { richMessageText } from "../../../src/telegram/inbound/rich-text.js";

const rich = {
  blocks: [
    { type: "heading", text: "Sizes", level: 2 },
    { type: "paragraph", text: ["See ", { type: "url", text: "the docs", url: "https://x.y" }] },
    { type: "mathematical_expression", expression: "E = mc^2" },
    {
      type: "table",
      cells: [
        [{ text: "a" }, { text: "1" }],
        [{ text: "b" }, { text: "22" }],
      ],
    },
    { type: "blockquote", blocks: [{ type: "paragraph", text: "quoted" }] },
    { type: "divider" },
  ],
} as unknown as RichMessage;

describe("richMessageText", () => {
  it("gives each block's words on a line, links by their words and formulas by their LaTeX", () => {
    expect(richMessageText(rich)).toBe("Sizes\nSee the docs\nE = mc^2\na\n1\nb\n22\nquoted");
  });

  it("gives a forwarded rich message's words to the model, as a text message", () => {
    const forwarded = {
      message_id: 1,
      date: 1,
      chat: { id: 11, type: "private", first_name: "Ann" },
      forward_origin: {
        type: "user",
        sender_user: { id: 5, is_bot: true, first_name: "B" },
        date: 1,
      },
      rich_message: rich,
    } as unknown as Message;
    expect(inboundOf(forwarded, 20 * 1024 * 1024)).toEqual({
      kind: "text",
      text: richMessageText(rich),
    });
  });
});
