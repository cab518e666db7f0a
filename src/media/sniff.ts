/**
 * What a file's bytes really are. Telegram passes on whatever MIME type the sender's app claimed,
 * and Gemini refuses a request whose image or PDF it cannot decode — every later request of the
 * conversation too, as the file stays in its history. So images and PDFs are checked here, by
 * their signatures and their ends (a cut-off download or a damaged file fails), before they are
 * stored.
 */
export type Sniffed =
  | { ok: true; mimeType: string }
  | { ok: false; problem: "empty" | "damaged" | "not text" };

const startsWith = (bytes: Buffer, signature: readonly number[], at = 0) =>
  signature.every((b, i) => bytes[at + i] === b);

const ascii = (bytes: Buffer, from: number, to: number) =>
  bytes.subarray(Math.max(0, from), to).toString("latin1");

/** The image or PDF type the bytes are, whole, or undefined when they are none (or damaged). */
function imageOrPdf(bytes: Buffer): string | undefined {
  const end = bytes.length;
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) {
    // A JPEG ends with its EOI marker; trailing padding after it is common.
    return ascii(bytes, end - 64, end).includes("\xff\xd9") ? "image/jpeg" : undefined;
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
 * Checks bytes against the type they claim. An image or PDF must be a whole one (its real type
 * wins over the claimed one: a PNG called JPEG is sent as PNG); text must be UTF-8; audio and
 * video Gemini decodes leniently, so only emptiness is refused.
 */
export function sniff(bytes: Buffer, claimed: string): Sniffed {
  if (bytes.length === 0) return { ok: false, problem: "empty" };
  const real = imageOrPdf(bytes);
  if (real) return { ok: true, mimeType: real };
  if (isImageOrPdf(claimed)) return { ok: false, problem: "damaged" };
  if (claimed === "text/plain") {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      return { ok: true, mimeType: claimed };
    } catch {
      return { ok: false, problem: "not text" };
    }
  }
  return { ok: true, mimeType: claimed };
}
