/**
 * Audio and video files whose first bytes are real (what Koroku's sniffing and Gemini read to
 * tell the container), padded with `size` bytes of `fill`: the samples are not.
 */
const padded = (head: Buffer, size: number, fill: number) =>
  Buffer.concat([head, Buffer.alloc(size, fill)]);

/** An ISO base media file: a box `ftyp` with the given major brand ("M4A ", "isom", "qt  "). */
export const isoMedia = (brand: string, size = 500, fill = 3) =>
  padded(
    Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from(`ftyp${brand}`, "latin1")]),
    size,
    fill,
  );

export const oggAudio = (size = 3_000, fill = 9) => padded(Buffer.from("OggS"), size, fill);

export const mp3Audio = (size = 500, fill = 2) =>
  padded(Buffer.from("ID3\x04\0", "latin1"), size, fill);

export const webmVideo = (size = 500, fill = 4) =>
  padded(Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), size, fill);

export const wavAudio = (size = 500, fill = 1) =>
  padded(Buffer.from("RIFF\0\0\0\0WAVEfmt ", "latin1"), size, fill);
