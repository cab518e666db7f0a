import type { Token } from "markdown-it";

/** markdown-it's flat token stream as a tree, shared by the HTML and the rich renderers. */

export interface TreeNode {
  readonly token: Token;
  readonly children: TreeNode[];
}

/** Quote markers, list markers and indentation before a table's line in the source. */
export const CONTAINER_PREFIX = /^(?:\s*(?:>|[-+*]|\d{1,9}[.)])(?=\s|$))*\s*/;

/** markdown-it emits flat open/close pairs; a tree lets each construct render its own children. */
export function toTree(tokens: readonly Token[]): TreeNode[] {
  const root: TreeNode[] = [];
  const stack: TreeNode[][] = [root];
  for (const token of tokens) {
    if (token.nesting === -1) {
      stack.pop();
      continue;
    }
    const node: TreeNode = { token, children: [] };
    (stack.at(-1) ?? root).push(node);
    if (token.nesting === 1) stack.push(node.children);
  }
  return root;
}

/**
 * A block opened at the last level markdown-it parses may have lost its content (lists about
 * 10 deep, quotes about 20): a renderer shows such a reply unformatted rather than with words
 * missing.
 */
export function lostNesting(tokens: readonly Token[], maxNesting: number): boolean {
  return tokens.some((token) => token.nesting === 1 && token.level >= maxNesting - 1);
}

/**
 * The lines of a table as written, without the quote or list markup around it (which
 * markdown-it took off too), or undefined when a row has more cells than the header: markdown-it
 * drops those (a `|` inside inline code starts a cell too), so such a table is shown as written.
 */
export function tableSourceIfLossy(table: TreeNode, source: readonly string[]): string | undefined {
  const rows = table.children.flatMap((section) => section.children);
  const columns = rows[0]?.children.length ?? 0;
  const lines = tableSource(table, source);
  return lines.some((line) => cellCount(line) > columns) ? lines.join("\n") : undefined;
}

export function tableSource(table: TreeNode, source: readonly string[]): string[] {
  const [start, end] = table.token.map ?? [0, 0];
  return source.slice(start, end).map((line) => line.replace(CONTAINER_PREFIX, ""));
}

/** Cells in a table line as markdown-it splits it: at every `|` not escaped with a backslash. */
function cellCount(line: string): number {
  const cells = line.trim().split(/(?<!\\)\|/);
  if (cells[0]?.trim() === "") cells.shift();
  if (cells.length > 1 && cells.at(-1)?.trim() === "") cells.pop();
  return cells.length;
}
