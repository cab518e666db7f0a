import {
  type Block,
  blockChars,
  blockCount,
  blocksChars,
  blockText,
  type Cell,
  type Inline,
  inlineChars,
  type ListItem,
  rowChars,
} from "./blocks.js";
import type { RichBudget } from "./limits.js";

/**
 * Keeps an answer within a rich message's limits by splitting between blocks: a list between its
 * items, a quote between its blocks, a table between its rows (each part with the header again).
 * Only a block that alone exceeds the characters of a message (a paragraph or code block longer
 * than 32,768) is cut inside, at a word or a line.
 */

export function cost(block: Block): RichBudget {
  return { chars: blockChars(block), blocks: blockCount(block) };
}

function fits(total: RichBudget, budget: RichBudget): boolean {
  return total.chars <= budget.chars && total.blocks <= budget.blocks;
}

/**
 * Groups items in order, as many to a group as the budget allows; each item must fit alone.
 * Telegram counts a line break between two items of a group as a character.
 */
export function pack<T>(
  items: readonly T[],
  measure: (item: T) => RichBudget,
  budget: RichBudget,
  overhead: RichBudget = { chars: 0, blocks: 0 },
): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let total = overhead;
  for (const item of items) {
    const size = measure(item);
    const separator = group.length > 0 ? 1 : 0;
    const next = {
      chars: total.chars + separator + size.chars,
      blocks: total.blocks + size.blocks,
    };
    if (group.length > 0 && !fits(next, budget)) {
      groups.push(group);
      group = [];
      total = { chars: overhead.chars + size.chars, blocks: overhead.blocks + size.blocks };
    } else {
      total = next;
    }
    group.push(item);
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** A block as blocks that each fit the budget on their own. */
export function fitBlock(block: Block, budget: RichBudget): Block[] {
  if (fits(cost(block), budget)) return [block];
  switch (block.kind) {
    case "paragraph":
    case "heading":
      return splitInline(block.inline, budget.chars).map((inline) => ({ ...block, inline }));
    case "pre":
      return splitLines(block.text, budget.chars).map((text) => ({ ...block, text }));
    case "math":
      // A formula longer than a message cannot be cut and stay one: its source is shown.
      return splitLines(block.source, budget.chars).map((text) => ({
        kind: "pre",
        text,
        language: undefined,
      }));
    case "divider":
      return [block];
    case "quote":
      return splitQuote(block.blocks, budget);
    case "list":
      return splitList(block, budget);
    case "table":
      return splitTable(block.rows, budget);
  }
}

function fitAll(blocks: readonly Block[], budget: RichBudget): Block[] {
  return blocks.flatMap((block) => fitBlock(block, budget));
}

function splitQuote(blocks: readonly Block[], budget: RichBudget): Block[] {
  const inner = { chars: budget.chars, blocks: budget.blocks - 1 };
  return pack(fitAll(blocks, inner), cost, inner).map((group) => ({
    kind: "quote",
    blocks: group,
  }));
}

function splitList(list: Extract<Block, { kind: "list" }>, budget: RichBudget): Block[] {
  // An item costs itself and its blocks; a list around it costs one more.
  const inner = { chars: budget.chars, blocks: budget.blocks - 2 };
  const entries = list.items.flatMap((item, index) => {
    const number = list.start === undefined ? undefined : (item.value ?? list.start + index);
    const groups = pack(fitAll(item.blocks, inner), cost, inner);
    if (groups.length <= 1) return [{ item, number }];
    // Each part of an item too big for one message shows the item's own number again.
    return groups.map((blocks) => ({ item: { ...item, blocks, value: number }, number }));
  });
  const entryCost = ({ item }: { item: ListItem }): RichBudget => ({
    chars: blocksChars(item.blocks),
    blocks: 1 + item.blocks.reduce((total, block) => total + blockCount(block), 0),
  });
  // A part of a numbered list starts at its first item's number, so the count goes on.
  return pack(entries, entryCost, budget, { chars: 0, blocks: 1 }).map((group) => ({
    kind: "list",
    start: group[0]?.number,
    items: group.map((entry) => entry.item),
  }));
}

function splitTable(rows: readonly (readonly Cell[])[], budget: RichBudget): Block[] {
  const headerCount = rows.findIndex((row) => !row.every((cell) => cell.header));
  const header = rows.slice(0, headerCount < 0 ? rows.length : headerCount);
  const body = rows.slice(header.length);
  // The header rows, and the line break after them, are in every part.
  const overhead = {
    chars: header.reduce((n, row) => n + rowChars(row) + 1, 0),
    blocks: 1 + header.length,
  };
  const rowCost = (row: readonly Cell[]) => ({ chars: rowChars(row), blocks: 1 });
  const tooBig =
    body.length === 0 || body.some((row) => !fits(add(overhead, rowCost(row)), budget));
  if (tooBig) {
    // A row longer than a message: the table goes out as its rows' text, cut where it must be.
    return fitAll(
      blockText({ kind: "table", rows })
        .split("\n")
        .map((line): Block => ({ kind: "paragraph", inline: [{ kind: "text", text: line }] })),
      budget,
    );
  }
  return pack(body, rowCost, budget, overhead).map((group) => ({
    kind: "table",
    rows: [...header, ...group],
  }));
}

function add(a: RichBudget, b: RichBudget): RichBudget {
  return { chars: a.chars + b.chars, blocks: a.blocks + b.blocks };
}

/** Lines of text in parts of at most `max` characters, cut inside a line only when it is longer. */
export function splitLines(text: string, max: number): string[] {
  const parts: string[] = [];
  let part: string | undefined;
  for (const line of text.split("\n").flatMap((line) => hardCut(line, max))) {
    if (part !== undefined && part.length + 1 + line.length <= max) {
      part += `\n${line}`;
      continue;
    }
    if (part !== undefined) parts.push(part);
    part = line;
  }
  if (part !== undefined) parts.push(part);
  return parts;
}

function hardCut(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const at = cutPoint(rest, max);
    parts.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  parts.push(rest);
  return parts;
}

/** Never between the two halves of a surrogate pair. */
function cutPoint(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

/** Inline content in parts of at most `max` characters, cut after a space where there is one. */
export function splitInline(nodes: readonly Inline[], max: number): Inline[][] {
  const parts: Inline[][] = [];
  let rest: readonly Inline[] = nodes;
  while (rest.length > 0) {
    const [head, tail] = take(rest, max, false);
    // An empty part would leave `rest` as it was, and this loop would fill the heap.
    if (head.length === 0) throw new Error("splitInline: nothing fits an empty part");
    parts.push(head);
    rest = tail;
  }
  return parts;
}

/** The longest head of `nodes` within `budget` characters, and what is left. */
function take(
  nodes: readonly Inline[],
  budget: number,
  started: boolean,
): [Inline[], readonly Inline[]] {
  const head: Inline[] = [];
  let left = budget;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i] as Inline;
    const size = inlineChars([node]);
    if (size <= left) {
      head.push(node);
      left -= size;
      continue;
    }
    const [part, remainder] = cutNode(node, left, started || head.length > 0);
    if (part !== undefined) head.push(part);
    const tail = remainder === undefined ? nodes.slice(i + 1) : [remainder, ...nodes.slice(i + 1)];
    return [head, tail];
  }
  return [head, []];
}

function cutNode(
  node: Inline,
  budget: number,
  started: boolean,
): [Inline | undefined, Inline | undefined] {
  // Nothing fits (the part is full); lastIndexOf would read a budget of -1 as 0 and take a
  // leading space past it.
  if (budget <= 0) return [undefined, node];
  if (node.kind === "text") {
    const space = node.text.lastIndexOf(" ", budget - 1);
    // Rather a whole word in the next part than half of one in this.
    if (space < 0 && started) return [undefined, node];
    const at = space >= 0 ? space + 1 : cutPoint(node.text, budget);
    return [
      { kind: "text", text: node.text.slice(0, at) },
      { kind: "text", text: node.text.slice(at) },
    ];
  }
  if (node.kind === "format" || node.kind === "link") {
    const [head, tail] = take(node.children, budget, started);
    return [
      head.length > 0 ? { ...node, children: head } : undefined,
      tail.length > 0 ? { ...node, children: tail } : undefined,
    ];
  }
  // A formula longer than a whole part cannot be cut and stay one: its source is shown, as code.
  if (node.kind === "math" && !started) {
    const source: Inline = {
      kind: "format",
      tag: "code",
      children: [{ kind: "text", text: node.source }],
    };
    return cutNode(source, budget, started);
  }
  // A break or a formula cannot be cut: it opens the next part.
  return [undefined, node];
}
