import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { errorCode, resolveInWorkspace } from "../tools/workspace-path.js";

/** Where documents users send are saved, inside WORKSPACE_DIR, for the file tools to work on. */
export const WORKSPACE_INBOX = "inbox";
const MAX_NAME_CHARS = 120;

/**
 * A file name that cannot climb out of the inbox or hide: the last path piece only, no control
 * characters, no leading dots, not too long. "../../x" is "x"; a name with nothing left gets one.
 */
export function safeFileName(name: string | undefined, fallback: string): string {
  const last = (name ?? "").split(/[\\/]/).pop() ?? "";
  const cleaned = last
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
    .replace(/[\u0000-\u001f\u007f]/g, "")
    .replace(/^[.\s]+/, "")
    .trim();
  if (cleaned === "") return fallback;
  if (cleaned.length <= MAX_NAME_CHARS) return cleaned;
  const ext = path.extname(cleaned).slice(0, 16);
  return `${cleaned.slice(0, MAX_NAME_CHARS - ext.length)}${ext}`;
}

/**
 * Saves a document into WORKSPACE_DIR/inbox under its (made safe) name and returns the path
 * relative to the workspace. An existing file is never overwritten: "a.pdf" becomes "a-2.pdf".
 */
export async function saveToWorkspace(
  workspaceDir: string,
  name: string,
  bytes: Uint8Array,
): Promise<string> {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let n = 1; ; n++) {
    const relative = path.join(WORKSPACE_INBOX, n === 1 ? name : `${stem}-${n}${ext}`);
    const file = await resolveInWorkspace(workspaceDir, relative);
    try {
      await mkdir(path.dirname(file), { recursive: true });
      // "wx": never follows or replaces anything already there.
      const handle = await open(file, "wx");
      try {
        await handle.writeFile(bytes);
      } finally {
        await handle.close();
      }
      return relative;
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
    }
  }
}
