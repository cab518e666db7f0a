/**
 * What a file's bytes really are. Telegram passes on whatever MIME type the sender's app claimed,
 * and Gemini refuses a request holding a file it cannot decode (a refused turn is then set aside,
 * see src/session/refusals.ts, but the user's file goes unread). So files are checked here before
 * they are stored: images and PDFs by their signatures and their ends (a cut-off download or a
 * damaged file fails), audio and video by their container's signature, text as UTF-8.
 */
export type Sniffed =
  | { ok: true; mimeType: string }
  | { ok: false; problem: "empty" | "damaged" | "not text" };

const startsWith = (bytes: Buffer, signature: readonly number[], at = 0) =>
  signature.every((b, i) => bytes[at + i] === b);

const ascii = (bytes: Buffer, from: number, to: number) =>
  bytes.subarray(Math.max(0, from), to).toString("latin1");

const isRestart = (marker: number) => marker >= 0xd0 && marker <= 0xd7;

/**
 * Whether a JPEG's segments lead to its end-of-image marker before the bytes run out. Walking
 * them skips what segments hold (an EXIF thumbnail has an end marker of its own) and stops at
 * the image's end, whatever follows it: a Motion Photo's video, a camera's trailer.
 */
function jpegComplete(bytes: Buffer): boolean {
  let at = 2;
  while (at + 1 < bytes.length) {
    if (bytes[at] !== 0xff) return false;
    const marker = bytes[at + 1] as number;
    if (marker === 0xd9) return true;
    // Fill bytes before a marker, and markers without a length.
    if (marker === 0xff) at += 1;
    else if (isRestart(marker) || marker === 0x01) at += 2;
    else if (at + 3 >= bytes.length) return false;
    else {
      at += 2 + bytes.readUInt16BE(at + 2);
      if (marker === 0xda) {
        // A scan's coded data runs to the next marker: not a stuffed 0xff00, not a restart.
        for (at = bytes.indexOf(0xff, at); at >= 0; at = bytes.indexOf(0xff, at + 1)) {
          const next = bytes[at + 1];
          if (next !== undefined && next !== 0 && !isRestart(next)) break;
        }
        if (at < 0) return false;
      }
    }
  }
  return false;
}

/** The image or PDF type the bytes are, whole, or undefined when they are none (or damaged). */
function imageOrPdf(bytes: Buffer): string | undefined {
  const end = bytes.length;
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) {
    // A JPEG ends with its EOI marker, with padding after it at most, or its segments say where.
    const whole = ascii(bytes, end - 64, end).includes("\xff\xd9") || jpegComplete(bytes);
    return whole ? "image/jpeg" : undefined;
  }
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
    return ascii(bytes, end - 32, end).includes("IEND") ? "image/png" : undefined;
  }
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") {
    return bytes.readUInt32LE(4) + 8 <= end ? "image/webp" : undefined;
  }
  if (ascii(bytes, 4, 8) === "ftyp" && /^(heic|heix|mif1|heif)/.test(ascii(bytes, 8, 12))) {
    return ascii(bytes, 8, 12) === "heic" || ascii(bytes, 8, 12) === "heix"
      ? "image/heic"
      : "image/heif";
  }
  if (ascii(bytes, 0, 5) === "%PDF-") {
    return ascii(bytes, end - 1024, end).includes("%%EOF") ? "application/pdf" : undefined;
  }
  return undefined;
}

const isImageOrPdf = (mimeType: string) =>
  mimeType.startsWith("image/") || mimeType === "application/pdf";

/**
 * An audio or video container Gemini reads, told by its first bytes, with the types it may go
 * by. A file claimed as one of them goes as claimed (an MP4 file holds audio or video); else it
 * goes as what its bytes say (an OGG voice note called MP3 is sent as OGG).
 */
type Container = {
  test(bytes: Buffer): boolean;
  types: readonly string[];
  /** The type sent when the claimed one is not among `types`, for audio and for video. */
  audio: string;
  video: string;
};

const riff = (form: string) => (bytes: Buffer) =>
  ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === form;

// ISO base media (MP4, M4A, 3GPP, QuickTime): a box of type ftyp first, or one of QuickTime's old
// first boxes.
const isoMedia = (bytes: Buffer) => /^(ftyp|moov|mdat|wide|free|skip)$/.test(ascii(bytes, 4, 8));

// MPEG audio frame: 11 sync bits; MP3 has a layer (bits 1-2 of the second byte), AAC's ADTS none.
const mpegAudio = (bytes: Buffer) =>
  bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0 && ((bytes[1] ?? 0) & 0x06) !== 0;
const adts = (bytes: Buffer) => bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xf6) === 0xf0;

const CONTAINERS: readonly Container[] = [
  {
    test: isoMedia,
    types: ["audio/m4a", "video/mp4", "video/quicktime", "video/3gpp"],
    audio: "audio/m4a",
    video: "video/mp4",
  },
  {
    test: (b) => ascii(b, 0, 4) === "OggS",
    types: ["audio/ogg"],
    audio: "audio/ogg",
    video: "audio/ogg",
  },
  {
    test: (b) => ascii(b, 0, 3) === "ID3" || mpegAudio(b),
    types: ["audio/mpeg", "audio/mp3"],
    audio: "audio/mpeg",
    video: "audio/mpeg",
  },
  { test: riff("WAVE"), types: ["audio/wav"], audio: "audio/wav", video: "audio/wav" },
  {
    test: (b) => ascii(b, 0, 4) === "fLaC",
    types: ["audio/flac"],
    audio: "audio/flac",
    video: "audio/flac",
  },
  {
    test: (b) => ascii(b, 0, 4) === "ADIF" || adts(b),
    types: ["audio/aac"],
    audio: "audio/aac",
    video: "audio/aac",
  },
  {
    test: (b) => ascii(b, 0, 4) === "FORM" && /^AIF[FC]$/.test(ascii(b, 8, 12)),
    types: ["audio/aiff"],
    audio: "audio/aiff",
    video: "audio/aiff",
  },
  {
    // Matroska's EBML header: WebM is Matroska.
    test: (b) => startsWith(b, [0x1a, 0x45, 0xdf, 0xa3]),
    types: ["video/webm"],
    audio: "video/webm",
    video: "video/webm",
  },
  {
    // An MPEG program stream's pack header, or an elementary stream's sequence header.
    test: (b) => startsWith(b, [0x00, 0x00, 0x01, 0xba]) || startsWith(b, [0x00, 0x00, 0x01, 0xb3]),
    types: ["video/mpeg"],
    audio: "video/mpeg",
    video: "video/mpeg",
  },
  { test: riff("AVI "), types: ["video/avi"], audio: "video/avi", video: "video/avi" },
];

/** The audio or video type to send bytes claimed as `claimed` as, or undefined when they are none. */
function audioOrVideo(bytes: Buffer, claimed: string): string | undefined {
  const container = CONTAINERS.find((c) => c.test(bytes));
  if (!container) return undefined;
  if (container.types.includes(claimed)) return claimed;
  return claimed.startsWith("audio/") ? container.audio : container.video;
}

/** UTF-8 without NUL characters: a binary file can decode as UTF-8, but never holds none. */
function isText(bytes: Buffer): boolean {
  try {
    return !new TextDecoder("utf-8", { fatal: true }).decode(bytes).includes("\0");
  } catch {
    return false;
  }
}

/**
 * Checks bytes against the type they claim. An image or PDF must be a whole one (its real type
 * wins over the claimed one: a PNG called JPEG is sent as PNG); audio and video must be in a
 * container Gemini reads (a ZIP sent as a voice note is not); text must be UTF-8.
 */
export function sniff(bytes: Buffer, claimed: string): Sniffed {
  if (bytes.length === 0) return { ok: false, problem: "empty" };
  const real = imageOrPdf(bytes);
  if (real) return { ok: true, mimeType: real };
  if (isImageOrPdf(claimed)) return { ok: false, problem: "damaged" };
  if (claimed.startsWith("audio/") || claimed.startsWith("video/")) {
    const media = audioOrVideo(bytes, claimed);
    return media ? { ok: true, mimeType: media } : { ok: false, problem: "damaged" };
  }
  if (claimed === "text/plain") {
    return isText(bytes) ? { ok: true, mimeType: claimed } : { ok: false, problem: "not text" };
  }
  return { ok: true, mimeType: claimed };
}
