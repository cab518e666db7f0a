import { constants } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Reads a regular file of at most `maxBytes`; a directory, a socket or a larger file is an error
 * the model can read (`tooBig` words the last one). File-system errors are thrown as they are,
 * for the caller to reword with describeFsError.
 */
export async function readCapped(
  file: string,
  relPath: string,
  maxBytes: number,
  tooBig: (size: number) => string,
): Promise<Buffer> {
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer, holding one of
  // the few threads every file access of the process shares. Regular files read as usual.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) {
      throw new Error(`"${relPath}" is a directory; call list_files to see inside it`);
    }
    if (!stats.isFile()) throw new Error(`"${relPath}" is not a regular file`);
    if (stats.size > maxBytes) throw new Error(tooBig(stats.size));
    // A spare byte reveals a file that grew after stat(), which could have passed the cap.
    const buffer = Buffer.alloc(stats.size + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > stats.size) {
      throw new Error(`"${relPath}" grew while it was being read; try again`);
    }
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
