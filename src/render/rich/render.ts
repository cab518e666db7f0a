import { VISIBLE } from "../chunk.js";
import { escapeHtml, renderMarkdown } from "../markdown-html.js";
import { type Block, blockText, shownText } from "./blocks.js";
import { markdownToBlocks } from "./from-markdown.js";
import { blocksToRichHtml } from "./html.js";
import { RICH_BUDGET, type RichBudget } from "./limits.js";
import { cost, fitBlock, pack } from "./split.js";

/** One rich message of an answer, and the Telegram HTML that says the same if it is refused. */
export interface RichChunk {
  readonly html: string;
  readonly fallbackHtml: string;
}

interface Piece {
  readonly block: Block;
  /** Which top-level block of the Markdown this is (a part of). */
  readonly origin: number;
  readonly lines: readonly [number, number];
}

/**
 * An answer in Markdown as rich messages, each within the limits of one; none when the answer
 * shows nothing. A message's fallback is today's HTML rendering of the Markdown its blocks came
 * from; a block split between messages falls back to its text, part by part.
 */
export function renderRichMessages(
  markdown: string,
  budget: RichBudget = RICH_BUDGET,
): RichChunk[] {
  const { groups, perOrigin, source } = richGroups(markdown, budget);
  return groups.map((group) => ({
    html: blocksToRichHtml(group.map((piece) => piece.block)),
    fallbackHtml: fallbackHtml(group, perOrigin, source),
  }));
}

/**
 * A rich draft of an answer being written: its last message's worth (where it grows), and after
 * it, in italics, what the model is doing; undefined when there is nothing to show.
 */
export function richDraftHtml(markdown: string, status?: string): string | undefined {
  const note: Block[] =
    status === undefined
      ? []
      : [
          {
            kind: "paragraph",
            inline: [{ kind: "format", tag: "i", children: [{ kind: "text", text: status }] }],
          },
        ];
  // The note, and the line break before it, take from the room the answer has.
  const room = note.reduce((left, block) => {
    const size = cost(block);
    return { chars: left.chars - size.chars - 1, blocks: left.blocks - size.blocks };
  }, RICH_BUDGET);
  const last = richGroups(markdown, room).groups.at(-1) ?? [];
  const blocks = [...last.map((piece) => piece.block), ...note];
  return blocks.length === 0 ? undefined : blocksToRichHtml(blocks);
}

/** The answer's blocks, fitted to the budget and packed into messages that show something. */
function richGroups(markdown: string, budget: RichBudget) {
  const source = markdown.toWellFormed().split(/\r\n?|\n/);
  const pieces = markdownToBlocks(markdown.toWellFormed()).flatMap(
    ({ block, lines }, origin): Piece[] =>
      fitBlock(block, budget)
        .filter((part) => part.kind === "divider" || VISIBLE.test(shownText(part)))
        .map((part) => ({ block: part, origin, lines })),
  );
  const groups = pack(pieces, (piece) => cost(piece.block), budget).filter((group) =>
    group.some((piece) => VISIBLE.test(shownText(piece.block))),
  );
  return { groups, perOrigin: countBy(pieces), source };
}

function fallbackHtml(
  group: readonly Piece[],
  perOrigin: ReadonlyMap<number, number>,
  source: readonly string[],
): string {
  const inGroup = countBy(group);
  const parts: string[] = [];
  let range: [number, number] | undefined;
  const flush = () => {
    if (range) parts.push(renderMarkdown(source.slice(range[0], range[1]).join("\n")));
    range = undefined;
  };
  let previous: number | undefined;
  for (const piece of group) {
    const whole = inGroup.get(piece.origin) === perOrigin.get(piece.origin);
    if (!whole) {
      flush();
      parts.push(escapeHtml(blockText(piece.block)));
    } else if (piece.origin !== previous) {
      range = range ? [range[0], piece.lines[1]] : [piece.lines[0], piece.lines[1]];
    }
    previous = piece.origin;
  }
  flush();
  return parts.filter((part) => part !== "").join("\n\n");
}

function countBy(pieces: readonly Piece[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const piece of pieces) counts.set(piece.origin, (counts.get(piece.origin) ?? 0) + 1);
  return counts;
}
