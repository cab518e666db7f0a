/** A PNG chunk: length, type, data and a CRC (left zero: nothing here checks it). */
function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.byteLength);
  return Buffer.concat([length, Buffer.from(type, "latin1"), data, Buffer.alloc(4)]);
}

/**
 * A PNG whose header says `width` × `height`, padded to `size` bytes with a text chunk: what
 * Telegram and Gemini read of it (signature, dimensions, the closing IEND) is real, the pixels
 * are not.
 */
export function pngImage(width: number, height: number, size = 200): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);
  const head = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
  ]);
  const end = chunk("IEND", Buffer.alloc(0));
  const padding = Math.max(0, size - head.byteLength - end.byteLength - 12);
  return Buffer.concat([head, chunk("tEXt", Buffer.alloc(padding, 0x61)), end]);
}
