import type { MarkdownIt, StateBlock, StateInline } from "markdown-it";

/**
 * Formulas as models write them: `$x^2$`, `$$…$$`, `\(…\)`, and `\[…\]` on lines of its own.
 * Dollars follow pandoc's rule, so prices stay text: an opening `$` has a non-space right after
 * it, a closing one a non-space right before it and no letter or digit after it ("$5 and $10" is
 * no formula).
 */
export function mathPlugin(md: MarkdownIt): void {
  // Before "escape", which would otherwise eat the backslash of `\(` and LaTeX's own.
  md.inline.ruler.before("escape", "math_inline", inlineMath);
  md.block.ruler.before("fence", "math_block", blockMath, {
    alt: ["paragraph", "reference", "blockquote", "list"],
  });
}

interface Found {
  readonly source: string;
  readonly end: number;
}

function inlineMath(state: StateInline, silent: boolean): boolean {
  const found = matchInline(state.src, state.pos, state.posMax);
  if (found === undefined) return false;
  if (!silent) {
    const token = state.push("math_inline", "", 0);
    token.content = found.source;
  }
  state.pos = found.end;
  return true;
}

function matchInline(src: string, at: number, max: number): Found | undefined {
  if (src.startsWith("$$", at)) return delimited(src, at + 2, "$$", max);
  if (src.startsWith("\\(", at)) return delimited(src, at + 2, "\\)", max);
  // `\[…\]` is a formula on lines of its own only (blockMath): inside a sentence it is how
  // models escape brackets ("as the paper says \[1\]", "arr\[0\]"), and shows as them.
  if (src[at] === "$") return singleDollar(src, at, max);
  return undefined;
}

function delimited(src: string, from: number, close: string, max: number): Found | undefined {
  const end = src.indexOf(close, from);
  if (end < 0 || end + close.length > max) return undefined;
  const source = src.slice(from, end).trim();
  return source === "" ? undefined : { source, end: end + close.length };
}

function singleDollar(src: string, at: number, max: number): Found | undefined {
  const first = src[at + 1];
  if (first === undefined || at + 1 >= max || /\s|\$/.test(first)) return undefined;
  for (let i = at + 1; i < max; i++) {
    const char = src[i];
    if (char === "\\") {
      i++;
      continue;
    }
    if (char !== "$") continue;
    const before = src[i - 1] ?? " ";
    const after = i + 1 < max ? (src[i + 1] ?? "") : "";
    if (/\s/.test(before) || /[\p{L}\p{N}]/u.test(after)) return undefined;
    return { source: src.slice(at + 1, i), end: i + 1 };
  }
  return undefined;
}

const BLOCK_DELIMITERS: ReadonlyMap<string, string> = new Map([
  ["$$", "$$"],
  ["\\[", "\\]"],
]);

/** A formula on lines of its own: `$$…$$` or `\[…\]`, on one line or several. */
function blockMath(
  state: StateBlock,
  startLine: number,
  endLine: number,
  silent: boolean,
): boolean {
  // Four spaces of indentation make a code block, as with fences.
  if ((state.sCount[startLine] ?? 0) - state.blkIndent >= 4) return false;
  const first = lineText(state, startLine).trimEnd();
  const open = first.slice(0, 2);
  const close = BLOCK_DELIMITERS.get(open);
  if (close === undefined) return false;
  const rest = first.slice(2);
  let lines: string[];
  let last = startLine;
  if (rest.includes(close)) {
    // `$$a$$ and more` is a formula inside a paragraph, for the inline rule.
    if (!rest.endsWith(close) || rest.indexOf(close) !== rest.length - close.length) return false;
    lines = [rest.slice(0, -close.length)];
  } else {
    lines = [rest];
    for (last = startLine + 1; ; last++) {
      if (last >= endLine || (state.sCount[last] ?? 0) < state.blkIndent) return false;
      const text = lineText(state, last).trimEnd();
      if (text.endsWith(close)) {
        lines.push(text.slice(0, -close.length));
        break;
      }
      if (text.includes(close)) return false;
      lines.push(text);
    }
  }
  const source = lines.join("\n").trim();
  if (source === "") return false;
  if (silent) return true;
  const token = state.push("math_block", "", 0);
  token.block = true;
  token.content = source;
  token.map = [startLine, last + 1];
  state.line = last + 1;
  return true;
}

function lineText(state: StateBlock, line: number): string {
  const start = (state.bMarks[line] ?? 0) + (state.tShift[line] ?? 0);
  return state.src.slice(start, state.eMarks[line]);
}
