/**
 * What an answer is made of, between markdown-it's tokens and a rich message's HTML: small
 * enough to measure against the limits and to split between blocks.
 */

export type Inline =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "break" }
  | {
      readonly kind: "format";
      readonly tag: "b" | "i" | "s" | "code";
      readonly children: readonly Inline[];
    }
  | { readonly kind: "link"; readonly href: string; readonly children: readonly Inline[] }
  | { readonly kind: "math"; readonly source: string };

export type Align = "left" | "center" | "right";

export interface Cell {
  readonly inline: readonly Inline[];
  readonly header: boolean;
  readonly align: Align | undefined;
}

export interface ListItem {
  readonly blocks: readonly Block[];
  /** A task list's checkbox: true checked, false unchecked. */
  readonly checked: boolean | undefined;
  /** The number an ordered item shows; set on items that continue a list split in two. */
  readonly value: number | undefined;
}

export type Block =
  | { readonly kind: "paragraph"; readonly inline: readonly Inline[] }
  | {
      readonly kind: "heading";
      readonly level: 1 | 2 | 3 | 4 | 5 | 6;
      readonly inline: readonly Inline[];
    }
  | { readonly kind: "pre"; readonly text: string; readonly language: string | undefined }
  | { readonly kind: "math"; readonly source: string }
  | { readonly kind: "divider" }
  | {
      readonly kind: "list";
      /** The first item's number; undefined for a bullet list. */
      readonly start: number | undefined;
      readonly items: readonly ListItem[];
    }
  | { readonly kind: "quote"; readonly blocks: readonly Block[] }
  | { readonly kind: "table"; readonly rows: readonly (readonly Cell[])[] };

export function inlineChars(nodes: readonly Inline[]): number {
  let total = 0;
  for (const node of nodes) {
    if (node.kind === "text") total += node.text.length;
    else if (node.kind === "break") total += 1;
    else if (node.kind === "math") total += node.source.length;
    else total += inlineChars(node.children);
  }
  return total;
}

/**
 * Characters of a block as Telegram counts them: UTF-16 units of the text it shows, formula
 * source included and list labels not, with one line break between two of its blocks, list items
 * or table rows and one space between two cells.
 */
export function blockChars(block: Block): number {
  switch (block.kind) {
    case "paragraph":
    case "heading":
      return inlineChars(block.inline);
    case "pre":
      return block.text.length;
    case "math":
      return block.source.length;
    case "divider":
      return 0;
    case "list":
      return separated(block.items, (item) => blocksChars(item.blocks));
    case "quote":
      return blocksChars(block.blocks);
    case "table":
      return separated(block.rows, rowChars);
  }
}

/** Blocks one after another, as a message or a container holds them. */
export function blocksChars(blocks: readonly Block[]): number {
  return separated(blocks, blockChars);
}

export function rowChars(row: readonly Cell[]): number {
  return separated(row, (cell) => inlineChars(cell.inline));
}

/** Parts with one character between two of them: Telegram's line break, or a cell's space. */
function separated<T>(parts: readonly T[], measure: (part: T) => number): number {
  return parts.length === 0 ? 0 : sum(parts, measure) + parts.length - 1;
}

/** Blocks as the limit counts them: each block, each list item and each table row. */
export function blockCount(block: Block): number {
  switch (block.kind) {
    case "list":
      return 1 + sum(block.items, (item) => 1 + sum(item.blocks, blockCount));
    case "quote":
      return 1 + sum(block.blocks, blockCount);
    case "table":
      return 1 + block.rows.length;
    default:
      return 1;
  }
}

/** Levels of formatting nested in one another; text alone is none. */
export function inlineDepth(nodes: readonly Inline[]): number {
  let depth = 0;
  for (const node of nodes) {
    if (node.kind === "math") depth = Math.max(depth, 1);
    else if (node.kind === "format" || node.kind === "link") {
      depth = Math.max(depth, 1 + inlineDepth(node.children));
    }
  }
  return depth;
}

/**
 * Levels of blocks and formatting together. A list item counts as a level of its own, and a
 * table's row and cell do too: the stricter reading of "levels of nested formatting and blocks".
 */
export function blockDepth(block: Block): number {
  switch (block.kind) {
    case "paragraph":
    case "heading":
      return 1 + inlineDepth(block.inline);
    case "list":
      return 2 + Math.max(0, ...block.items.map((item) => maxDepth(item.blocks)));
    case "quote":
      return 1 + maxDepth(block.blocks);
    case "table":
      return 3 + Math.max(0, ...block.rows.flat().map((cell) => inlineDepth(cell.inline)));
    default:
      return 1;
  }
}

export function maxDepth(blocks: readonly Block[]): number {
  return Math.max(0, ...blocks.map(blockDepth));
}

export function inlineText(nodes: readonly Inline[]): string {
  return nodes
    .map((node) => {
      if (node.kind === "text") return node.text;
      if (node.kind === "break") return "\n";
      if (node.kind === "math") return node.source;
      return inlineText(node.children);
    })
    .join("");
}

/** What a block says, as plain text: for the fallback when Telegram refuses a message. */
export function blockText(block: Block): string {
  switch (block.kind) {
    case "paragraph":
    case "heading":
      return inlineText(block.inline);
    case "pre":
      return block.text;
    case "math":
      return block.source;
    case "divider":
      return "———";
    case "list":
      return block.items
        .map((item, index) => {
          const marker = block.start === undefined ? "•" : `${item.value ?? block.start + index}.`;
          return `${marker} ${item.blocks.map(blockText).join("\n")}`;
        })
        .join("\n");
    case "quote":
      return block.blocks.map(blockText).join("\n\n");
    case "table":
      return block.rows
        .map((row) => row.map((cell) => inlineText(cell.inline)).join(" | "))
        .join("\n");
  }
}

/** The text a block shows, without the list markers and rules its plain form adds. */
export function shownText(block: Block): string {
  switch (block.kind) {
    case "divider":
      return "";
    case "list":
      return block.items.map((item) => item.blocks.map(shownText).join("\n")).join("\n");
    case "quote":
      return block.blocks.map(shownText).join("\n");
    default:
      return blockText(block);
  }
}

function sum<T>(items: readonly T[], measure: (item: T) => number): number {
  let total = 0;
  for (const item of items) total += measure(item);
  return total;
}
