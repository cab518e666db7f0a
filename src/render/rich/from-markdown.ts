import MarkdownIt, { type Token } from "markdown-it";
import { planLink } from "../links.js";
import {
  lostNesting,
  type TreeNode,
  tableSource,
  tableSourceIfLossy,
  toTree,
} from "../markdown-tree.js";
import {
  type Align,
  type Block,
  blockText,
  type Cell,
  type Inline,
  inlineText,
  type ListItem,
} from "./blocks.js";
import { RICH_LIMITS } from "./limits.js";
import { mathPlugin } from "./math.js";

/**
 * Markdown (as Gemini writes it) → rich blocks, token by token. markdown-it has already resolved
 * unbalanced markup to literal text, and with html off a `<div>` the model wrote is text too, so
 * whatever is not a construct below reaches the user as the characters they were.
 */

/** A top-level block and the source lines it came from, for the HTML fallback. */
export interface SourcedBlock {
  readonly block: Block;
  readonly lines: readonly [number, number];
}

const TASK = /^\[([ xX])\]\s+/;
const HEADING_LEVELS = [1, 2, 3, 4, 5, 6] as const;

const parser = new MarkdownIt("commonmark", { html: false, linkify: false, typographer: false })
  .enable(["strikethrough", "table"])
  .use(mathPlugin);

const MAX_NESTING = parser.options.maxNesting ?? 20;

interface Context {
  readonly source: readonly string[];
  readonly inLink: boolean;
}

export function markdownToBlocks(markdown: string): SourcedBlock[] {
  const source = markdown.split(/\r\n?|\n/);
  const tokens = parser.parse(markdown, {});
  if (lostNesting(tokens, MAX_NESTING)) return plainBlocks(source);
  const ctx: Context = { source, inLink: false };
  return toTree(tokens).flatMap((node) => {
    const [start, end] = node.token.map ?? [0, source.length];
    const lines = [start, end] as const;
    return convertBlock(node, ctx)
      .flatMap((block) => fitDepth(block, RICH_LIMITS.nesting))
      .map((block) => ({ block, lines }));
  });
}

/** Markdown nested deeper than markdown-it parses goes out as the text it is, paragraph by paragraph. */
function plainBlocks(source: readonly string[]): SourcedBlock[] {
  const blocks: SourcedBlock[] = [];
  let start = 0;
  for (let line = 0; line <= source.length; line++) {
    if (line < source.length && (source[line] ?? "").trim() !== "") continue;
    const text = source.slice(start, line).join("\n").trim();
    if (text !== "") blocks.push({ block: textParagraph(text), lines: [start, line] });
    start = line + 1;
  }
  return blocks;
}

function textParagraph(text: string): Block {
  return { kind: "paragraph", inline: plainInline(text) };
}

/** Text with its line breaks as breaks: outside code, a rich message's lines are <br>s. */
function plainInline(content: string): Inline[] {
  const inline: Inline[] = [];
  content.split("\n").forEach((line, index) => {
    if (index > 0) inline.push({ kind: "break" });
    if (line !== "") inline.push({ kind: "text", text: line });
  });
  return inline;
}

function convertBlocks(nodes: readonly TreeNode[], ctx: Context): Block[] {
  return nodes.flatMap((node) => convertBlock(node, ctx));
}

function convertBlock(node: TreeNode, ctx: Context): Block[] {
  const { token } = node;
  switch (token.type) {
    case "paragraph_open":
      return paragraph("paragraph", node, ctx);
    case "heading_open":
      return paragraph("heading", node, ctx);
    case "bullet_list_open":
    case "ordered_list_open":
      return [list(node, ctx)];
    case "blockquote_open": {
      const blocks = convertBlocks(node.children, ctx);
      return blocks.length === 0 ? [] : [{ kind: "quote", blocks }];
    }
    case "fence":
    case "code_block":
      return code(token);
    case "math_block":
      return [{ kind: "math", source: token.content }];
    case "hr":
      return [{ kind: "divider" }];
    case "table_open":
      return [table(node, ctx)];
    case "inline":
      return inlineBlock(convertInline(toTree(token.children ?? []), ctx));
    default:
      return node.children.length > 0
        ? convertBlocks(node.children, ctx)
        : inlineBlock([{ kind: "text", text: token.content }]);
  }
}

function inlineBlock(inline: Inline[]): Block[] {
  return inlineText(inline).trim() === "" ? [] : [{ kind: "paragraph", inline }];
}

function paragraph(kind: "paragraph" | "heading", node: TreeNode, ctx: Context): Block[] {
  const inline = node.children.flatMap((child) =>
    child.token.type === "inline" ? convertInline(toTree(child.token.children ?? []), ctx) : [],
  );
  if (inlineText(inline).trim() === "") return [];
  if (kind === "paragraph") return [{ kind, inline }];
  const level = HEADING_LEVELS[Number(node.token.tag.slice(1)) - 1] ?? 6;
  return [{ kind, level, inline }];
}

function code(token: Token): Block[] {
  const text = token.content.replace(/\n$/, "");
  if (text.trim() === "") return [];
  const info =
    token.type === "fence" ? parser.utils.unescapeAll(token.info).trim().split(/\s+/)[0] : "";
  if (info?.toLowerCase() === "math") return [{ kind: "math", source: text.trim() }];
  return [{ kind: "pre", text, language: info === "" ? undefined : info }];
}

function list(node: TreeNode, ctx: Context): Block {
  const ordered = node.token.type === "ordered_list_open";
  const start = ordered ? Number(node.token.attrGet("start") ?? "1") : undefined;
  const items = node.children.map((item): ListItem => {
    const blocks = convertBlocks(item.children, ctx);
    const task = ordered ? undefined : takeTask(blocks);
    return {
      blocks: task?.blocks ?? blocks,
      checked: task?.checked,
      value: undefined,
    };
  });
  return { kind: "list", start, items };
}

/** `- [ ] to do` and `- [x] done` are task items, with a checkbox. */
function takeTask(blocks: Block[]): { blocks: Block[]; checked: boolean } | undefined {
  const [first, ...rest] = blocks;
  if (first?.kind !== "paragraph") return undefined;
  const [lead, ...inline] = first.inline;
  const match = lead?.kind === "text" ? TASK.exec(lead.text) : null;
  if (!match || lead?.kind !== "text") return undefined;
  const remaining = lead.text.slice(match[0].length);
  const head: Inline[] = remaining === "" ? inline : [{ kind: "text", text: remaining }, ...inline];
  const paragraphs: Block[] =
    inlineText(head).trim() === "" ? [] : [{ kind: "paragraph", inline: head }];
  return { blocks: [...paragraphs, ...rest], checked: match[1] !== " " };
}

function table(node: TreeNode, ctx: Context): Block {
  const lossy = tableSourceIfLossy(node, ctx.source);
  const rows = node.children.flatMap((section) => section.children);
  // Wider than a rich table may be: shown as written, every cell still there.
  if (lossy !== undefined || (rows[0]?.children.length ?? 0) > RICH_LIMITS.tableColumns) {
    return {
      kind: "pre",
      text: lossy ?? tableSource(node, ctx.source).join("\n"),
      language: undefined,
    };
  }
  return {
    kind: "table",
    rows: rows.map((row) =>
      row.children.map(
        (cell): Cell => ({
          inline: convertBlocks(cell.children, ctx).flatMap((block) =>
            block.kind === "paragraph" ? block.inline : [],
          ),
          header: cell.token.type === "th_open",
          align: alignOf(cell.token),
        }),
      ),
    ),
  };
}

function alignOf(token: Token): Align | undefined {
  const match = /text-align:\s*(left|center|right)/.exec(String(token.attrGet("style") ?? ""));
  return match?.[1] as Align | undefined;
}

function convertInline(nodes: readonly TreeNode[], ctx: Context): Inline[] {
  return nodes.flatMap((node) => convertInlineNode(node, ctx));
}

function convertInlineNode(node: TreeNode, ctx: Context): Inline[] {
  const { token } = node;
  switch (token.type) {
    case "softbreak":
    case "hardbreak":
      return [{ kind: "break" }];
    case "code_inline":
      return ctx.inLink ? text(token.content) : format("code", text(token.content));
    case "math_inline":
      return ctx.inLink ? text(token.content) : [{ kind: "math", source: token.content }];
    case "strong_open":
      return format("b", convertInline(node.children, ctx));
    case "em_open":
      return format("i", convertInline(node.children, ctx));
    case "s_open":
      return format("s", convertInline(node.children, ctx));
    case "link_open":
      return link(node, ctx);
    case "image":
      return image(token, ctx);
    default:
      return node.children.length > 0 ? convertInline(node.children, ctx) : text(token.content);
  }
}

function text(content: string): Inline[] {
  return content === "" ? [] : [{ kind: "text", text: content }];
}

function format(tag: "b" | "i" | "s" | "code", children: Inline[]): Inline[] {
  return children.length === 0 ? [] : [{ kind: "format", tag, children }];
}

function link(node: TreeNode, ctx: Context): Inline[] {
  const href = String(node.token.attrGet("href") ?? "");
  const children = convertInline(node.children, { ...ctx, inLink: true });
  return ctx.inLink ? children : linked(href, children);
}

/** Images stay links: a media block Telegram cannot fetch would refuse the whole message. */
function image(token: Token, ctx: Context): Inline[] {
  const src = String(token.attrGet("src") ?? "");
  const alt = text(token.content);
  if (ctx.inLink) return alt;
  return linked(src, alt.length > 0 ? alt : text("image"), alt);
}

/** A link as src/render/links.ts plans it; `unlinked` is what shows when it is no link. */
function linked(href: string, children: Inline[], unlinked: Inline[] = children): Inline[] {
  const plan = planLink(href, inlineText(children));
  switch (plan.kind) {
    case "text":
      return unlinked;
    case "link":
      return [
        {
          kind: "link",
          href: plan.href,
          children: plan.text === "own" ? children : text(plan.href),
        },
      ];
    case "text-then-address":
      return [
        ...children,
        ...text(" ("),
        { kind: "link", href: plan.href, children: text(plan.href) },
        ...text(")"),
      ];
  }
}

/**
 * Keeps a block within `levels` levels of nesting: formatting past them becomes its text, and a
 * container with no room left becomes paragraphs of what it says.
 */
function fitDepth(block: Block, levels: number): Block[] {
  switch (block.kind) {
    case "paragraph":
    case "heading":
      return [{ ...block, inline: limitInline(block.inline, levels - 1) }];
    case "list":
      if (levels < 3) return flatten(block);
      return [
        {
          ...block,
          items: block.items.map((item) => ({
            ...item,
            blocks: item.blocks.flatMap((child) => fitDepth(child, levels - 2)),
          })),
        },
      ];
    case "quote":
      if (levels < 2) return flatten(block);
      return [{ ...block, blocks: block.blocks.flatMap((child) => fitDepth(child, levels - 1)) }];
    case "table":
      if (levels < 4) return flatten(block);
      return [
        {
          ...block,
          rows: block.rows.map((row) =>
            row.map((cell) => ({ ...cell, inline: limitInline(cell.inline, levels - 3) })),
          ),
        },
      ];
    default:
      return [block];
  }
}

function flatten(block: Block): Block[] {
  return blockText(block)
    .split(/\n{2,}/)
    .filter((part) => part.trim() !== "")
    .map(textParagraph);
}

function limitInline(nodes: readonly Inline[], levels: number): Inline[] {
  if (levels <= 0) return plainInline(inlineText(nodes));
  return nodes.map((node): Inline => {
    if (node.kind === "format" || node.kind === "link") {
      return { ...node, children: limitInline(node.children, levels - 1) };
    }
    return node;
  });
}
