import { escapeHtml } from "../markdown-html.js";
import type { Block, Cell, Inline, ListItem } from "./blocks.js";

/**
 * Rich blocks → Telegram's rich HTML (InputRichMessage.html). Every character of text is
 * escaped, so nothing the model wrote can turn into a tag, and no whitespace is put between
 * tags: a line break is a <br/>, never a newline, outside code.
 */

function attribute(value: string): string {
  return escapeHtml(value).replaceAll('"', "&quot;");
}

export function blocksToRichHtml(blocks: readonly Block[]): string {
  return blocks.map(blockHtml).join("");
}

function blockHtml(block: Block): string {
  switch (block.kind) {
    case "paragraph":
      return `<p>${inlineHtml(block.inline)}</p>`;
    case "heading":
      return `<h${block.level}>${inlineHtml(block.inline)}</h${block.level}>`;
    case "pre": {
      const text = escapeHtml(block.text);
      return block.language === undefined
        ? `<pre>${text}</pre>`
        : `<pre><code class="language-${attribute(block.language)}">${text}</code></pre>`;
    }
    case "math":
      return `<tg-math-block>${escapeHtml(block.source)}</tg-math-block>`;
    case "divider":
      return "<hr/>";
    case "list": {
      const items = block.items.map(itemHtml).join("");
      if (block.start === undefined) return `<ul>${items}</ul>`;
      return block.start === 1 ? `<ol>${items}</ol>` : `<ol start="${block.start}">${items}</ol>`;
    }
    case "quote":
      return `<blockquote>${blocksToRichHtml(block.blocks)}</blockquote>`;
    case "table":
      return `<table bordered>${block.rows.map((row) => `<tr>${row.map(cellHtml).join("")}</tr>`).join("")}</table>`;
  }
}

function itemHtml(item: ListItem): string {
  const value = item.value === undefined ? "" : ` value="${item.value}"`;
  const checkbox =
    item.checked === undefined ? "" : `<input type="checkbox"${item.checked ? " checked" : ""}>`;
  const [only, ...more] = item.blocks;
  // An item of one paragraph holds its text directly, as a tight Markdown list shows it.
  const content =
    only?.kind === "paragraph" && more.length === 0
      ? inlineHtml(only.inline)
      : blocksToRichHtml(item.blocks);
  return `<li${value}>${checkbox}${content}</li>`;
}

function cellHtml(cell: Cell): string {
  const tag = cell.header ? "th" : "td";
  const align = cell.align === undefined ? "" : ` align="${cell.align}"`;
  return `<${tag}${align}>${inlineHtml(cell.inline)}</${tag}>`;
}

function inlineHtml(nodes: readonly Inline[]): string {
  return nodes.map(inlineNodeHtml).join("");
}

function inlineNodeHtml(node: Inline): string {
  switch (node.kind) {
    case "text":
      return escapeHtml(node.text);
    case "break":
      return "<br/>";
    case "math":
      return `<tg-math>${escapeHtml(node.source)}</tg-math>`;
    case "format":
      return `<${node.tag}>${inlineHtml(node.children)}</${node.tag}>`;
    case "link":
      return `<a href="${attribute(node.href)}">${inlineHtml(node.children)}</a>`;
  }
}
