/**
 * The answer as it is said aloud. A voice note reads the words; what only makes sense on screen
 * stays in the message beside it: code blocks and tables are named, not read; a link is read as
 * its words (a bare address as "a link"); Markdown's marks are dropped.
 */
export function spokenText(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  const out: string[] = [];
  let fence: string | undefined;
  let inTable = false;
  for (const line of lines) {
    const fenceMark = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (fenceMark?.startsWith(fence)) fence = undefined;
      continue;
    }
    if (fenceMark !== undefined) {
      fence = fenceMark;
      out.push("(The code is in the message.)");
      continue;
    }
    const tableRow = /^\s*\|.*\|\s*$/.test(line);
    if (tableRow) {
      if (!inTable) out.push("(The table is in the message.)");
      inTable = true;
      continue;
    }
    inTable = false;
    out.push(spokenLine(line));
  }
  return out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function spokenLine(line: string): string {
  const words = line
    // Headings, quotes and list marks are layout.
    .replace(/^\s{0,3}#{1,6}\s+/, "")
    .replace(/^\s*>+\s?/, "")
    .replace(/^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/, "")
    .replace(/^\s*(?:[-*_]\s*){3,}$/, "")
    // A picture by its description, a link by its words.
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
    // An address ends before the punctuation that ends its sentence.
    .replace(/<?\b(?:https?|mailto|ftp):[^\s)>]*[^\s)>.,;:!?'"]>?/gi, "a link")
    .replace(/\bwww\.[^\s)]*[^\s).,;:!?'"]/gi, "a link");
  // Inline code is read when it is a word or two, named when it is more. It stands aside while
  // the marks are dropped, so that max_tool_calls keeps its underscores.
  const code: string[] = [];
  return (
    words
      .replace(/`([^`]+)`/g, (_, span: string) => {
        code.push(span.length <= 30 ? span : "some code");
        return `\uE000${code.length - 1}\uE001`;
      })
      .replace(/<\/?[a-z][^>]*>/gi, "")
      .replace(/(\*\*|\*|~~)(\S(?:.*?\S)?)\1/g, "$2")
      // Underscores mark emphasis only at a word's edge (snake_case stays as it is).
      .replace(/(?<![\p{L}\p{N}])(__|_)(\S(?:.*?\S)?)\1(?![\p{L}\p{N}])/gu, "$2")
      .replace(/\\([\\`*_{}[\]()#+\-.!|~>])/g, "$1")
      .replace(/\uE000(\d+)\uE001/g, (_, i: string) => code[Number(i)] ?? "")
  );
}

/** The longest text one speech request gets: about a minute and a quarter of speech. */
export const MAX_PART_CHARS = 1_000;
/**
 * Parts spoken of one answer at most (about six minutes). The rest of a longer answer is only
 * in its message: speech is the dearest part of a reply, and nobody listens to a lecture.
 */
export const MAX_PARTS = 5;

/**
 * The text cut into parts of at most `maxChars` for one speech request each, at paragraph ends,
 * else at sentence ends, else at spaces; a part never splits a word unless a word is longer
 * than a part.
 */
export function speechParts(text: string, maxChars = MAX_PART_CHARS): string[] {
  const parts: string[] = [];
  let current = "";
  const push = () => {
    if (current.trim() !== "") parts.push(current.trim());
    current = "";
  };
  for (const piece of pieces(text, maxChars)) {
    const joined = current === "" ? piece : `${current}${piece}`;
    if (joined.trim().length > maxChars) {
      push();
      current = piece;
    } else {
      current = joined;
    }
  }
  push();
  return parts;
}

/** Sentences (with their trailing space), each at most `maxChars` (a longer one cut at spaces). */
function pieces(text: string, maxChars: number): string[] {
  // Chinese and Japanese end their sentences with full-width marks, and closing quotes of their own.
  const sentences = text.match(/[^.!?…。！？\n]*(?:[.!?…。！？]+["')\]」』）]*|\n+|$)\s*/g) ?? [];
  return sentences
    .filter((s) => s !== "")
    .flatMap((sentence) => {
      if (sentence.length <= maxChars) return [sentence];
      const words = sentence.match(/\S+\s*/g) ?? [];
      return words.flatMap((word) => {
        const cut: string[] = [];
        for (let i = 0; i < word.length; i += maxChars) cut.push(word.slice(i, i + maxChars));
        return cut;
      });
    });
}
