import path from "node:path";

const MAX_NAME_CHARS = 120;

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
 * characters, keeping the extension. Undefined when nothing is left.
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
  if (cleaned.length <= MAX_NAME_CHARS) return cleaned;
  const ext = path.extname(cleaned).slice(0, 16);
  return `${cleaned.slice(0, MAX_NAME_CHARS - ext.length)}${ext}`;
}
