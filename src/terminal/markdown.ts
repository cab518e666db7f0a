/** ANSI styles, or nothing where the output is not a terminal. */
export type Styles = {
  bold(text: string): string;
  italic(text: string): string;
  code(text: string): string;
  dim(text: string): string;
};

const ansi = (open: number, close: number) => (text: string) =>
  `\x1b[${open}m${text}\x1b[${close}m`;

export const ANSI_STYLES: Styles = {
  bold: ansi(1, 22),
  italic: ansi(3, 23),
  code: ansi(36, 39),
  dim: ansi(2, 22),
};

const same = (text: string) => text;
export const PLAIN_STYLES: Styles = { bold: same, italic: same, code: same, dim: same };

/** Inline code first (nothing inside it is markup), then bold, then italic. */
function inline(text: string, styles: Styles): string {
  return text
    .split(/(`[^`]+`)/)
    .map((piece) =>
      piece.length > 2 && piece.startsWith("`") && piece.endsWith("`")
        ? styles.code(piece.slice(1, -1))
        : piece
            .replace(/\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__/g, (_, a, b) =>
              styles.bold(a ?? b),
            )
            .replace(/(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])/g, (_, a) => styles.italic(a)),
    )
    .join("");
}

/**
 * Renders Markdown for a terminal one line at a time (so that an answer can be shown as its
 * lines complete): headings and bold in bold, code in colour, list markers as bullets, quotes
 * with a bar. `state` carries whether a fenced code block is open from one line to the next.
 */
export function renderLine(line: string, styles: Styles, state: { inCode: boolean }): string {
  if (/^\s*(```|~~~)/.test(line)) {
    state.inCode = !state.inCode;
    return styles.dim(line.trim().startsWith("```") && !state.inCode ? "```" : line.trim());
  }
  if (state.inCode) return styles.code(line);
  const heading = /^\s{0,3}#{1,6}\s+(.*)$/.exec(line);
  if (heading) return styles.bold(inline(heading[1] ?? "", styles));
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1]}• ${inline(bullet[2] ?? "", styles)}`;
  const quote = /^\s*>\s?(.*)$/.exec(line);
  if (quote) return `${styles.dim("│")} ${inline(quote[1] ?? "", styles)}`;
  return inline(line, styles);
}
