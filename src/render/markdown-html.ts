import type { Token } from "markdown-it";
import MarkdownIt from "markdown-it";
import { htmlToPlainText } from "./chunk.js";
import { planLink } from "./links.js";
import { lostNesting, type TreeNode, tableSourceIfLossy, toTree } from "./markdown-tree.js";

/**
 * Markdown (as Gemini writes it) → the HTML subset Telegram accepts with parse_mode "HTML".
 * Walks markdown-it's token stream, so unbalanced markup is already resolved to literal text
 * by a real parser before anything is emitted.
 */

interface RenderContext {
  /** The Markdown's lines, for constructs best shown as written. */
  readonly source: readonly string[];
  /** How many lists enclose the block being rendered. */
  readonly listDepth: number;
  /** Telegram cannot nest blockquotes, so inner ones are flattened. */
  readonly inQuote: boolean;
  /** Telegram cannot nest links or put code inside a link. */
  readonly inLink: boolean;
}

const LIST_INDENT = "    ";
const HORIZONTAL_RULE = "———";

// html:false turns raw HTML in the Markdown into text, which escapeHtml then neutralises.
// The parser keeps no per-document state, so one instance serves every call.
const parser = new MarkdownIt("commonmark", {
  html: false,
  linkify: false,
  typographer: false,
}).enable(["strikethrough", "table"]);

export function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function escapeAttribute(value: string): string {
  return escapeHtml(value).replaceAll('"', "&quot;");
}

// markdown-it parses blocks nested this deep at most; past it, it silently drops the rest of
// the block.
const MAX_NESTING = parser.options.maxNesting ?? 20;

export function renderMarkdown(markdown: string): string {
  const tokens = parser.parse(markdown, {});
  if (lostNesting(tokens, MAX_NESTING)) {
    return escapeHtml(markdown.trim());
  }
  const tree = toTree(tokens);
  const source = markdown.split(/\r\n?|\n/);
  return renderBlocks(tree, { source, listDepth: 0, inQuote: false, inLink: false }, "\n\n").trim();
}

function renderBlocks(nodes: readonly TreeNode[], ctx: RenderContext, separator: string): string {
  return nodes
    .map((node) => renderBlock(node, ctx))
    .filter((html) => html !== "")
    .join(separator);
}

function renderBlock(node: TreeNode, ctx: RenderContext): string {
  const { token } = node;
  switch (token.type) {
    case "inline":
      return renderInline(toTree(token.children ?? []), ctx);
    case "heading_open": {
      const text = renderBlocks(node.children, ctx, "\n");
      return text === "" ? "" : `<b>${text}</b>`;
    }
    case "bullet_list_open":
    case "ordered_list_open":
      return renderList(node, ctx);
    case "blockquote_open": {
      const inner = renderBlocks(node.children, { ...ctx, inQuote: true }, "\n\n");
      return ctx.inQuote || inner === "" ? inner : `<blockquote>${inner}</blockquote>`;
    }
    case "fence":
    case "code_block":
      return renderCode(token);
    case "hr":
      return HORIZONTAL_RULE;
    case "table_open":
      return renderTable(node, ctx);
    default:
      return node.children.length > 0
        ? renderBlocks(node.children, ctx, "\n")
        : escapeHtml(token.content);
  }
}

function renderCode(token: Token): string {
  const code = token.content.replace(/\n$/, "");
  if (code === "") return "";
  const language =
    token.type === "fence" ? parser.utils.unescapeAll(token.info).trim().split(/\s+/)[0] : "";
  const open = language ? `<code class="language-${escapeAttribute(language)}">` : "<code>";
  return `<pre>${open}${escapeHtml(code)}</code></pre>`;
}

function renderList(node: TreeNode, ctx: RenderContext): string {
  const ordered = node.token.type === "ordered_list_open";
  const start = Number(node.token.attrGet("start") ?? "1");
  return node.children
    .map((item, index) => renderListItem(item, ordered ? `${start + index}.` : "•", ctx))
    .join("\n");
}

function renderListItem(item: TreeNode, marker: string, ctx: RenderContext): string {
  const pad = LIST_INDENT.repeat(ctx.listDepth);
  const under = `${pad}${LIST_INDENT}`;
  const nested: RenderContext = { ...ctx, listDepth: ctx.listDepth + 1 };
  const parts = item.children
    .map((child) => {
      // A nested list indents itself, and code keeps its own indentation.
      if (isList(child)) return { html: renderBlock(child, nested), indented: true };
      const html = indentOutsideCode(renderBlock(child, ctx), under);
      return { html, indented: isCode(child) };
    })
    .filter((part) => part.html !== "");
  const [first, ...rest] = parts;
  const head = first === undefined ? `${pad}${marker}` : `${pad}${marker} ${first.html}`;
  return [head, ...rest.map((part) => (part.indented ? part.html : `${under}${part.html}`))].join(
    "\n",
  );
}

/** Prose wraps under a list marker; what is inside <pre> keeps its lines as they are. */
function indentOutsideCode(html: string, indent: string): string {
  return html
    .split(/(<pre>[\s\S]*?<\/pre>)/)
    .map((piece) => (piece.startsWith("<pre>") ? piece : piece.replaceAll("\n", `\n${indent}`)))
    .join("");
}

function isList(node: TreeNode): boolean {
  return node.token.type === "bullet_list_open" || node.token.type === "ordered_list_open";
}

function isCode(node: TreeNode): boolean {
  return node.token.type === "fence" || node.token.type === "code_block";
}

/** Telegram has no tables: one line per row, cells separated by a bar. */
function renderTable(node: TreeNode, ctx: RenderContext): string {
  const lossy = tableSourceIfLossy(node, ctx.source);
  if (lossy !== undefined) return `<pre>${escapeHtml(lossy)}</pre>`;
  const rows = node.children.flatMap((section) => section.children);
  return rows
    .map((row) => row.children.map((cell) => renderBlocks(cell.children, ctx, " ")).join(" | "))
    .join("\n");
}

function renderInline(nodes: readonly TreeNode[], ctx: RenderContext): string {
  return nodes.map((node) => renderInlineNode(node, ctx)).join("");
}

function renderInlineNode(node: TreeNode, ctx: RenderContext): string {
  const { token } = node;
  switch (token.type) {
    case "softbreak":
    case "hardbreak":
      return "\n";
    case "code_inline":
      return ctx.inLink ? escapeHtml(token.content) : `<code>${escapeHtml(token.content)}</code>`;
    case "strong_open":
      return wrap("b", renderInline(node.children, ctx));
    case "em_open":
      return wrap("i", renderInline(node.children, ctx));
    case "s_open":
      return wrap("s", renderInline(node.children, ctx));
    case "link_open":
      return renderLink(node, ctx);
    case "image":
      return renderImage(token, ctx);
    default:
      return node.children.length > 0
        ? renderInline(node.children, ctx)
        : escapeHtml(token.content);
  }
}

function wrap(tag: string, inner: string): string {
  return inner === "" ? "" : `<${tag}>${inner}</${tag}>`;
}

function renderLink(node: TreeNode, ctx: RenderContext): string {
  const href = String(node.token.attrGet("href") ?? "");
  const inner = renderInline(node.children, { ...ctx, inLink: true });
  return ctx.inLink ? inner : linked(href, inner);
}

function renderImage(token: Token, ctx: RenderContext): string {
  const src = String(token.attrGet("src") ?? "");
  const alt = escapeHtml(token.content);
  if (ctx.inLink) return alt;
  return linked(src, alt === "" ? "image" : alt, alt);
}

/** A link as src/render/links.ts plans it; `unlinked` is what shows when it is no link. */
function linked(href: string, inner: string, unlinked: string = inner): string {
  const plan = planLink(href, htmlToPlainText(inner));
  if (plan.kind === "text") return unlinked;
  const anchor = (html: string) => `<a href="${escapeAttribute(plan.href)}">${html}</a>`;
  switch (plan.kind) {
    case "link":
      return anchor(plan.text === "own" ? inner : escapeHtml(plan.href));
    case "text-then-address":
      return `${inner} (${anchor(escapeHtml(plan.href))})`;
  }
}
