/**
 * Splits Telegram HTML into messages that each fit Telegram's length limit and parse on their own.
 * Telegram counts the UTF-16 length of the text left after tags are removed and entities decoded,
 * so the HTML is first cut into atoms: whole tags, and one character (or one entity) of text each.
 */

export const TELEGRAM_MESSAGE_LIMIT = 4096;

type HtmlAtom =
  | { readonly kind: "open"; readonly name: string; readonly raw: string }
  | { readonly kind: "close"; readonly name: string; readonly raw: string }
  | { readonly kind: "text"; readonly raw: string; readonly text: string };

interface Cut {
  /** Atoms [start, end) form the chunk. */
  readonly end: number;
  /** The next chunk starts here; atoms in [end, resume) are the dropped break. */
  readonly resume: number;
}

type OpenTag = Extract<HtmlAtom, { kind: "open" }>;
type CloseTag = Extract<HtmlAtom, { kind: "close" }>;

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  "&lt;": "<",
  "&gt;": ">",
  "&amp;": "&",
  "&quot;": '"',
};

/**
 * A character Telegram shows. It refuses a message with none, and counts zero-width characters
 * (and Hangul fillers) as none, like whitespace.
 */
export const VISIBLE = /[^\s\u200b-\u200f\u2060\ufeff\u3164\u115f\u1160\uffa0]/;

/** Break kinds, best first: paragraph ("\n\n"), line ("\n"), word (" "). */
const PARAGRAPH = 3;
const LINE = 2;
const WORD = 1;

export function htmlToPlainText(html: string): string {
  return tokenizeHtml(html)
    .map((atom) => (atom.kind === "text" ? atom.text : ""))
    .join("");
}

export function splitMessage(html: string, limit: number = TELEGRAM_MESSAGE_LIMIT): string[] {
  // A surrogate pair is two units and cannot be split, so smaller limits could never be met.
  if (!Number.isInteger(limit) || limit < 2) {
    throw new RangeError(`splitMessage limit must be an integer >= 2, got ${limit}`);
  }
  // Telegram counts text, and no text is longer than its HTML (an entity is never shorter than
  // what it stands for): HTML within the limit is one message, found without cutting it into atoms.
  if (html.length <= limit) return wholeMessage(html);
  const atoms = tokenizeHtml(html);
  const chunks: string[] = [];
  let open: readonly OpenTag[] = [];
  let start = 0;
  while (start < atoms.length) {
    const cut = findCut(atoms, start, limit);
    const body = atoms.slice(start, cut.end);
    const after = applyTags(open, body);
    if (body.some((atom) => atom.kind === "text" && VISIBLE.test(atom.text))) {
      chunks.push(
        open.map((tag) => tag.raw).join("") +
          body.map((atom) => atom.raw).join("") +
          closeAll(after),
      );
    }
    open = after;
    start = cut.resume;
  }
  return chunks;
}

/**
 * What the cutting loop makes of HTML whose text fits in one message: the HTML with the tags it
 * leaves open closed, or nothing when it shows no character. Tags are matched as tokenizeHtml
 * matches them; only text with an entity in it is decoded to be looked at.
 */
function wholeMessage(html: string): string[] {
  const tag = /<(\/?)([a-zA-Z][\w-]*)[^>]*>/y;
  const open: OpenTag[] = [];
  let visible = false;
  const look = (text: string) => {
    visible ||= VISIBLE.test(text.includes("&") ? htmlToPlainText(text) : text);
  };
  let textFrom = 0;
  for (let at = html.indexOf("<"); at >= 0; at = html.indexOf("<", at + 1)) {
    const atom = matchTag(html, at, tag);
    if (atom === undefined) continue;
    look(html.slice(textFrom, at));
    if (atom.kind === "open") open.push(atom);
    else {
      const index = open.findLastIndex((tag) => tag.name === atom.name);
      if (index >= 0) open.length = index;
    }
    textFrom = at + atom.raw.length;
    at = textFrom - 1;
  }
  look(html.slice(textFrom));
  return visible ? [html + closeAll(open)] : [];
}

/**
 * Lenient on purpose: it also serves the plain-text fallback for HTML Telegram rejected, so a
 * `<` or `&` that starts no tag or entity is kept as a literal character.
 */
function tokenizeHtml(html: string): HtmlAtom[] {
  // Sticky patterns carry lastIndex, so each call gets its own.
  const tag = /<(\/?)([a-zA-Z][\w-]*)[^>]*>/y;
  const entity = /&(?:lt|gt|amp|quot|#\d{1,7}|#x[\da-fA-F]{1,6});/y;
  const atoms: HtmlAtom[] = [];
  let i = 0;
  while (i < html.length) {
    const atom = matchTag(html, i, tag) ?? matchEntity(html, i, entity) ?? matchCodePoint(html, i);
    atoms.push(atom);
    i += atom.raw.length;
  }
  return atoms;
}

function matchTag(html: string, at: number, pattern: RegExp): OpenTag | CloseTag | undefined {
  if (html[at] !== "<") return undefined;
  pattern.lastIndex = at;
  const match = pattern.exec(html);
  if (!match) return undefined;
  const [raw, slash, name = ""] = match;
  const kind = slash === "/" ? "close" : "open";
  return { kind, name: name.toLowerCase(), raw };
}

function matchEntity(html: string, at: number, pattern: RegExp): HtmlAtom | undefined {
  if (html[at] !== "&") return undefined;
  pattern.lastIndex = at;
  const raw = pattern.exec(html)?.[0];
  const text = raw === undefined ? undefined : decodeEntity(raw);
  return raw === undefined || text === undefined ? undefined : { kind: "text", raw, text };
}

function decodeEntity(raw: string): string | undefined {
  const named = NAMED_ENTITIES[raw];
  if (named !== undefined) return named;
  const hex = raw.startsWith("&#x") || raw.startsWith("&#X");
  const codePoint = Number.parseInt(raw.slice(hex ? 3 : 2, -1), hex ? 16 : 10);
  const valid = codePoint > 0 && codePoint <= 0x10ffff;
  return valid ? String.fromCodePoint(codePoint) : undefined;
}

function matchCodePoint(html: string, at: number): HtmlAtom {
  const text = String.fromCodePoint(html.codePointAt(at) ?? 0);
  return { kind: "text", raw: text, text };
}

/**
 * Takes as much text as fits, then backs off to the best break in the chunk's second half
 * (so no chunk comes out tiny); without one, it cuts hard before the first atom that overflows.
 */
function findCut(atoms: readonly HtmlAtom[], start: number, limit: number): Cut {
  const minLength = Math.ceil(limit / 2);
  let length = 0;
  let best: Cut | undefined;
  let bestRank = 0;
  for (let i = start; i < atoms.length; i++) {
    const atom = atoms[i];
    if (atom?.kind !== "text") continue;
    const rank = length >= minLength ? breakRank(atoms, i) : 0;
    if (rank > 0 && rank >= bestRank) {
      best = { end: i, resume: i + (rank === PARAGRAPH ? 2 : 1) };
      bestRank = rank;
    }
    if (length + atom.text.length > limit) return best ?? hardCut(atoms, start, i);
    length += atom.text.length;
  }
  return { end: atoms.length, resume: atoms.length };
}

function breakRank(atoms: readonly HtmlAtom[], i: number): number {
  const char = textAt(atoms, i);
  if (char === "\n") return textAt(atoms, i + 1) === "\n" ? PARAGRAPH : LINE;
  return char === " " ? WORD : 0;
}

function textAt(atoms: readonly HtmlAtom[], i: number): string | undefined {
  const atom = atoms[i];
  return atom?.kind === "text" ? atom.text : undefined;
}

/** Tags opened right before the cut belong with the text they wrap, in the next chunk. */
function hardCut(atoms: readonly HtmlAtom[], start: number, overflow: number): Cut {
  let end = overflow;
  while (end > start && atoms[end - 1]?.kind === "open") end--;
  return { end, resume: end };
}

function applyTags(open: readonly OpenTag[], atoms: readonly HtmlAtom[]): OpenTag[] {
  const stack = [...open];
  for (const atom of atoms) {
    if (atom.kind === "open") stack.push(atom);
    if (atom.kind === "close") {
      const index = stack.findLastIndex((tag) => tag.name === atom.name);
      if (index >= 0) stack.length = index;
    }
  }
  return stack;
}

function closeAll(open: readonly OpenTag[]): string {
  return open
    .map((tag) => `</${tag.name}>`)
    .reverse()
    .join("");
}
