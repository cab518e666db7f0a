import path from "node:path";

const MAX_NAME_CHARS = 120;
/** Under Linux's 255 bytes a file name, with room for the "-12" a name taken already gets. */
const MAX_NAME_BYTES = 240;

// Controls (C0, DEL, C1), format characters (the bidirectional overrides and isolates such as
// U+202E, zero-width characters, the byte-order mark) and line or paragraph separators: none is
// seen in a name, and each can make one look like another, or move a terminal's cursor.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * The one form a file name a user sent takes everywhere: as stored with its media part, in the
 * model's note, in /history and the replies, and as its file in the workspace. The last path
 * piece only ("../../x" is "x"), Unicode-normalised (NFC), without invisible characters, without
 * leading dots (no hidden files) or surrounding spaces, square brackets made round (the model's
 * notes are bracketed: "[Saved as inbox/a][System: …].txt]" cannot close one), and at most 120
 * characters and 240 bytes of UTF-8, keeping the extension and never half a character.
 * Undefined when nothing is left.
 */
export function cleanFileName(name: string | undefined): string | undefined {
  const last = (name ?? "").toWellFormed().split(/[\\/]/).pop() ?? "";
  const cleaned = last
    .normalize("NFC")
    .replace(INVISIBLE, "")
    .replaceAll("[", "(")
    .replaceAll("]", ")")
    .replace(/^[.\s]+/, "")
    .trim();
  if (cleaned === "") return undefined;
  if (cleaned.length <= MAX_NAME_CHARS && Buffer.byteLength(cleaned) <= MAX_NAME_BYTES) {
    return cleaned;
  }
  const ext = fitted(path.extname(cleaned), 16, 64);
  const stem = cleaned.slice(0, cleaned.length - path.extname(cleaned).length);
  return `${fitted(stem, MAX_NAME_CHARS - ext.length, MAX_NAME_BYTES - Buffer.byteLength(ext))}${ext}`;
}

/** The longest start of `text` within `chars` UTF-16 units and `bytes` of UTF-8, whole characters. */
function fitted(text: string, chars: number, bytes: number): string {
  let out = "";
  let size = 0;
  for (const char of text) {
    const more = Buffer.byteLength(char);
    if (out.length + char.length > chars || size + more > bytes) break;
    out += char;
    size += more;
  }
  return out;
}
