import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { errorCode, resolveInWorkspace } from "../tools/workspace-path.js";

/** Where documents users send are saved, inside WORKSPACE_DIR, for the file tools to work on. */
export const WORKSPACE_INBOX = "inbox";

/**
 * Saves a document into WORKSPACE_DIR/inbox under its name (cleaned: see file-name.ts) and
 * returns the path relative to the workspace. An existing file is never overwritten: "a.pdf" becomes "a-2.pdf".
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
    // Outside the try: an "inbox" that is a file fails mkdir with EEXIST too, for every name.
    await mkdir(path.dirname(file), { recursive: true });
    try {
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
