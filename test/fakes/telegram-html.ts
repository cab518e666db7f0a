import type { MessageEntity } from "grammy/types";

/**
 * A strict model of how Telegram parses parse_mode "HTML" (modelled on tdlib's parser, with the
 * error texts Telegram returns). Stricter than Telegram where Telegram silently tolerates
 * sloppy input (a bare `&`, unknown attributes, `<a>` without href, an entity without `;`),
 * so tests catch output that only works by luck. Written independently of src/ on purpose:
 * the renderer's tests must not validate it with its own code.
 */

export type TelegramHtmlResult =
  | { readonly ok: true; readonly text: string; readonly entities: MessageEntity[] }
  | { readonly ok: false; readonly reason: string };

interface OpenTag {
  readonly name: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly offset: number;
  /** Set on <pre> when its direct <code> child names a language. */
  language?: string;
}

type Attributes = Map<string, string>;

class HtmlSyntaxError extends Error {}

/** The attributes each supported tag may carry; `required` ones must be present. */
const TAGS: Readonly<Record<string, { allowed: readonly string[]; required: readonly string[] }>> =
  {
    b: { allowed: [], required: [] },
    strong: { allowed: [], required: [] },
    i: { allowed: [], required: [] },
    em: { allowed: [], required: [] },
    u: { allowed: [], required: [] },
    ins: { allowed: [], required: [] },
    s: { allowed: [], required: [] },
    strike: { allowed: [], required: [] },
    del: { allowed: [], required: [] },
    span: { allowed: ["class"], required: ["class"] },
    "tg-spoiler": { allowed: [], required: [] },
    a: { allowed: ["href"], required: ["href"] },
    code: { allowed: ["class"], required: [] },
    pre: { allowed: [], required: [] },
    blockquote: { allowed: ["expandable"], required: [] },
    "tg-emoji": { allowed: ["emoji-id"], required: ["emoji-id"] },
    "tg-time": { allowed: ["unix", "format"], required: ["unix"] },
  };

const SIMPLE_ENTITY_TYPES: Readonly<Record<string, MessageEntity.CommonMessageEntity["type"]>> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  span: "spoiler",
  "tg-spoiler": "spoiler",
  code: "code",
};

const NAMED: Readonly<Record<string, string>> = { lt: "<", gt: ">", amp: "&", quot: '"' };

export function validateTelegramHtml(html: string): TelegramHtmlResult {
  try {
    return { ok: true, ...new TelegramHtmlParser(html).parse() };
  } catch (error) {
    if (error instanceof HtmlSyntaxError) return { ok: false, reason: error.message };
    throw error;
  }
}

class TelegramHtmlParser {
  private pos = 0;
  private text = "";
  private readonly stack: OpenTag[] = [];
  private readonly entities: MessageEntity[] = [];
  private readonly entityPattern = /&(?:(lt|gt|amp|quot)|#(\d{1,7})|#[xX]([\da-fA-F]{1,6}));/y;

  constructor(private readonly html: string) {}

  parse(): { text: string; entities: MessageEntity[] } {
    while (this.pos < this.html.length) {
      const char = this.html[this.pos];
      if (char === "<") this.parseTag();
      else if (char === "&") this.text += this.parseEntity();
      else {
        this.text += char;
        this.pos++;
      }
    }
    const unclosed = this.stack.at(-1);
    if (unclosed) {
      this.fail(`Can't find end tag corresponding to start tag "${unclosed.name}"`);
    }
    this.entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
    return { text: this.text, entities: this.entities };
  }

  private fail(reason: string): never {
    throw new HtmlSyntaxError(reason);
  }

  /** Telegram reports positions as UTF-8 byte offsets. */
  private byteOffset(at: number): number {
    return Buffer.byteLength(this.html.slice(0, at), "utf8");
  }

  private parseEntity(): string {
    this.entityPattern.lastIndex = this.pos;
    const match = this.entityPattern.exec(this.html);
    const decoded = match ? decodeEntity(match) : undefined;
    if (!match || decoded === undefined) {
      this.fail(
        `Character "&" at byte offset ${this.byteOffset(this.pos)} is not part of an HTML entity; use "&amp;"`,
      );
    }
    this.pos += match[0].length;
    return decoded;
  }

  private parseTag(): void {
    const begin = this.pos;
    if (this.html[begin + 1] === "/") this.parseEndTag(begin);
    else this.parseStartTag(begin);
  }

  private parseStartTag(begin: number): void {
    this.pos = begin + 1;
    const name = this.readWhile((c) => !isSpace(c) && c !== ">").toLowerCase();
    if (this.pos >= this.html.length) {
      this.fail(`Unclosed start tag at byte offset ${this.byteOffset(begin)}`);
    }
    const spec = TAGS[name];
    if (!spec) {
      this.fail(`Unsupported start tag "${name}" at byte offset ${this.byteOffset(begin)}`);
    }
    const attributes = this.parseAttributes(name, begin);
    for (const attribute of attributes.keys()) {
      if (!spec.allowed.includes(attribute)) {
        this.fail(`Unsupported attribute "${attribute}" in the tag "${name}"`);
      }
    }
    for (const attribute of spec.required) {
      if (!attributes.get(attribute)) {
        this.fail(`Tag "${name}" must have a non-empty attribute "${attribute}"`);
      }
    }
    checkAttributeValues(name, attributes);
    this.stack.push({ name, attributes, offset: this.text.length });
  }

  private parseAttributes(tag: string, begin: number): Attributes {
    const attributes: Attributes = new Map();
    for (;;) {
      this.readWhile(isSpace);
      const char = this.html[this.pos];
      if (char === undefined)
        this.fail(`Unclosed start tag at byte offset ${this.byteOffset(begin)}`);
      if (char === ">") {
        this.pos++;
        return attributes;
      }
      const name = this.readWhile((c) => !isSpace(c) && c !== "=" && c !== ">").toLowerCase();
      if (name === "") {
        this.fail(
          `Empty attribute name in the tag "${tag}" at byte offset ${this.byteOffset(begin)}`,
        );
      }
      this.readWhile(isSpace);
      if (this.html[this.pos] !== "=") {
        attributes.set(name, "");
        continue;
      }
      this.pos++;
      this.readWhile(isSpace);
      attributes.set(name, this.parseAttributeValue(begin));
    }
  }

  private parseAttributeValue(begin: number): string {
    const quote = this.html[this.pos];
    const quoted = quote === '"' || quote === "'";
    if (quoted) this.pos++;
    let value = "";
    for (;;) {
      const char = this.html[this.pos];
      if (char === undefined)
        this.fail(`Unclosed start tag at byte offset ${this.byteOffset(begin)}`);
      if (quoted ? char === quote : isSpace(char) || char === ">") break;
      if (char === "<") {
        this.fail(
          `Character "<" in an attribute value at byte offset ${this.byteOffset(this.pos)}`,
        );
      }
      if (char === "&") value += this.parseEntity();
      else {
        value += char;
        this.pos++;
      }
    }
    if (quoted) this.pos++;
    return value;
  }

  private parseEndTag(begin: number): void {
    const open = this.stack.pop();
    if (!open) this.fail(`Unexpected end tag at byte offset ${this.byteOffset(begin)}`);
    this.pos = begin + 2;
    const name = this.readWhile((c) => !isSpace(c) && c !== ">").toLowerCase();
    this.readWhile(isSpace);
    if (this.html[this.pos] !== ">") {
      this.fail(`Unclosed end tag at byte offset ${this.byteOffset(begin)}`);
    }
    this.pos++;
    if (name !== "" && name !== open.name) {
      this.fail(
        `Unmatched end tag at byte offset ${this.byteOffset(begin)}, expected "</${open.name}>", found "</${name}>"`,
      );
    }
    this.closeEntity(open);
  }

  private closeEntity(tag: OpenTag): void {
    const offset = tag.offset;
    const length = this.text.length - offset;
    const parent = this.stack.at(-1);
    const className = tag.attributes.get("class") ?? "";
    if (tag.name === "code" && parent?.name === "pre" && parent.offset === offset) {
      // <pre><code class="language-x"> is how HTML names a pre block's language.
      if (className.startsWith("language-")) parent.language = className.slice("language-".length);
      return;
    }
    if (length === 0) return;
    const entity = toEntity(tag, offset, length);
    this.entities.push(entity);
  }

  private readWhile(predicate: (char: string) => boolean): string {
    const start = this.pos;
    while (this.pos < this.html.length && predicate(this.html[this.pos] ?? "")) this.pos++;
    return this.html.slice(start, this.pos);
  }
}

function decodeEntity(match: RegExpExecArray): string | undefined {
  const [, named, decimal, hex] = match;
  if (named !== undefined) return NAMED[named];
  const codePoint = decimal !== undefined ? Number(decimal) : Number.parseInt(hex ?? "", 16);
  const isScalar =
    codePoint > 0 && codePoint <= 0x10ffff && (codePoint < 0xd800 || codePoint > 0xdfff);
  return isScalar ? String.fromCodePoint(codePoint) : undefined;
}

function checkAttributeValues(tag: string, attributes: ReadonlyMap<string, string>): void {
  const className = attributes.get("class");
  if (tag === "span" && className !== "tg-spoiler") {
    throw new HtmlSyntaxError('Tag "span" must have class "tg-spoiler"');
  }
  if (tag === "code" && className !== undefined && !className.startsWith("language-")) {
    throw new HtmlSyntaxError(
      `Tag "code" has class "${className}"; only "language-…" is supported`,
    );
  }
  if (tag === "tg-time" && !/^\d+$/.test(attributes.get("unix") ?? "")) {
    throw new HtmlSyntaxError('Tag "tg-time" must have a numeric attribute "unix"');
  }
  const format = attributes.get("format");
  if (tag === "tg-time" && format !== undefined && !isDateTimeFormat(format)) {
    throw new HtmlSyntaxError(`Tag "tg-time" has an invalid format "${format}"`);
  }
}

function toEntity(tag: OpenTag, offset: number, length: number): MessageEntity {
  switch (tag.name) {
    case "a":
      return { type: "text_link", offset, length, url: tag.attributes.get("href") ?? "" };
    case "pre":
      return tag.language === undefined
        ? { type: "pre", offset, length }
        : { type: "pre", offset, length, language: tag.language };
    case "blockquote":
      return {
        type: tag.attributes.has("expandable") ? "expandable_blockquote" : "blockquote",
        offset,
        length,
      };
    case "tg-emoji":
      return {
        type: "custom_emoji",
        offset,
        length,
        custom_emoji_id: tag.attributes.get("emoji-id") ?? "",
      };
    case "tg-time":
      return {
        type: "date_time",
        offset,
        length,
        unix_time: Number(tag.attributes.get("unix")),
        date_time_format: dateTimeFormat(tag.attributes.get("format")),
      };
    default: {
      const type = SIMPLE_ENTITY_TYPES[tag.name];
      if (type === undefined) throw new Error(`telegram-html: no entity type for <${tag.name}>`);
      return { type, offset, length };
    }
  }
}

type DateTimeFormat = MessageEntity.DateTimeMessageEntity["date_time_format"];

function isDateTimeFormat(value: string): value is DateTimeFormat {
  return /^(?:r|w?[dD]?[tT]?)$/.test(value);
}

function dateTimeFormat(value: string | undefined): DateTimeFormat {
  return value !== undefined && isDateTimeFormat(value) ? value : "";
}

function isSpace(char: string): boolean {
  return char === " " || char === "\t" || char === "\n" || char === "\r";
}
