import OpusScript from "opusscript";

/** What Gemini's speech models return: signed 16-bit little-endian PCM, mono, 24 kHz. */
export const TTS_SAMPLE_RATE = 24_000;

// 20 ms frames: what voice notes and libopus's speech mode are tuned for.
const FRAME_SAMPLES = TTS_SAMPLE_RATE / 50;
const FRAME_BYTES = FRAME_SAMPLES * 2;
// Ogg Opus counts granule positions at 48 kHz whatever the input rate (RFC 7845 §4).
const GRANULE_PER_SAMPLE = 48_000 / TTS_SAMPLE_RATE;
// libopus's look-ahead at 48 kHz (Fs/400 + Fs/250), which a player skips at the start.
const PRE_SKIP = 312;
// Speech at 32 kbit/s is clear and costs about 4 KB a second.
const BITRATE = 32_000;
// About a second of audio per page: small pages cost headers, large ones delay nothing here.
const PACKETS_PER_PAGE = 50;
const VENDOR = "koroku (libopus via opusscript)";

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg's CRC-32: polynomial 0x04c11db7, no reflection, initial value 0 (RFC 3533). */
export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ byte) & 0xff] as number)) >>> 0;
  }
  return crc;
}

/** An Ogg page's header type: nothing, the first page of the stream, its last page. */
const PageFlag = { None: 0, BeginningOfStream: 2, EndOfStream: 4 } as const;
type PageFlag = (typeof PageFlag)[keyof typeof PageFlag];

/** One Ogg page holding whole packets (each under 255 × 255 bytes, as Opus packets are). */
function page(
  packets: readonly Uint8Array[],
  flag: PageFlag,
  granule: bigint,
  serial: number,
  sequence: number,
): Buffer {
  const lacing: number[] = [];
  for (const packet of packets) {
    for (let left = packet.byteLength; ; left -= 255) {
      lacing.push(Math.min(left, 255));
      if (left < 255) break;
    }
  }
  const header = Buffer.alloc(27 + lacing.length);
  header.write("OggS", 0, "latin1");
  header.writeUInt8(0, 4);
  header.writeUInt8(flag, 5);
  header.writeBigUInt64LE(granule, 6);
  header.writeUInt32LE(serial, 14);
  header.writeUInt32LE(sequence, 18);
  header.writeUInt8(lacing.length, 26);
  Buffer.from(lacing).copy(header, 27);
  const bytes = Buffer.concat([header, ...packets]);
  bytes.writeUInt32LE(oggCrc(bytes), 22);
  return bytes;
}

function opusHead(): Buffer {
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head.writeUInt8(1, 8);
  head.writeUInt8(1, 9);
  head.writeUInt16LE(PRE_SKIP, 10);
  head.writeUInt32LE(TTS_SAMPLE_RATE, 12);
  head.writeInt16LE(0, 16);
  head.writeUInt8(0, 18);
  return head;
}

function opusTags(): Buffer {
  const vendor = Buffer.from(VENDOR, "utf8");
  const tags = Buffer.alloc(8 + 4 + vendor.byteLength + 4);
  tags.write("OpusTags", 0, "latin1");
  tags.writeUInt32LE(vendor.byteLength, 8);
  vendor.copy(tags, 12);
  tags.writeUInt32LE(0, 12 + vendor.byteLength);
  return tags;
}

/** A finished voice note: an Ogg Opus file and how long it plays. */
export type EncodedVoice = { bytes: Buffer; seconds: number };

/**
 * Encodes Gemini's PCM (24 kHz mono, 16-bit) into an Ogg Opus file, the format Telegram shows
 * as a voice note. PCM may come in pieces of any length, as a stream delivers it; `finish` pads
 * the last frame with silence and marks the stream's end so that players trim the padding.
 */
export class OggOpusEncoder {
  private readonly opus = new OpusScript(TTS_SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  private readonly serial = (Math.random() * 0x1_0000_0000) >>> 0;
  private readonly pages: Buffer[] = [];
  private packets: Buffer[] = [];
  private pending: Buffer = Buffer.alloc(0);
  private sequence = 0;
  private samples = 0;
  private finished = false;

  constructor() {
    this.opus.setBitrate(BITRATE);
    this.pages.push(
      page([opusHead()], PageFlag.BeginningOfStream, 0n, this.serial, this.sequence++),
    );
    this.pages.push(page([opusTags()], PageFlag.None, 0n, this.serial, this.sequence++));
  }

  /** Adds PCM bytes (an odd trailing byte waits for the next piece). */
  write(pcm: Uint8Array): void {
    if (this.finished) throw new Error("the voice note is already finished");
    let data = this.pending.byteLength > 0 ? Buffer.concat([this.pending, pcm]) : Buffer.from(pcm);
    while (data.byteLength >= FRAME_BYTES) {
      this.frame(data.subarray(0, FRAME_BYTES), FRAME_SAMPLES);
      data = data.subarray(FRAME_BYTES);
    }
    this.pending = Buffer.from(data);
  }

  /** The seconds of audio written so far. */
  get seconds(): number {
    return (this.samples + Math.floor(this.pending.byteLength / 2)) / TTS_SAMPLE_RATE;
  }

  /** Ends the stream and returns the file; the encoder cannot be used after. */
  finish(): EncodedVoice {
    if (this.finished) throw new Error("the voice note is already finished");
    const tail = Math.floor(this.pending.byteLength / 2);
    // A stream needs one packet; a note of no audio gets a frame of silence, played as nothing.
    if (tail > 0 || this.packets.length === 0) {
      const frame = Buffer.alloc(FRAME_BYTES);
      this.pending.copy(frame, 0, 0, tail * 2);
      this.frame(frame, tail);
    }
    this.flush(PageFlag.EndOfStream);
    this.finished = true;
    this.opus.delete();
    return { bytes: Buffer.concat(this.pages), seconds: this.samples / TTS_SAMPLE_RATE };
  }

  /** Frees the encoder without a file (a stop, a failure). */
  discard(): void {
    if (this.finished) return;
    this.finished = true;
    this.opus.delete();
  }

  private frame(pcm: Buffer, realSamples: number): void {
    // A full page goes out before the next packet, so the last page always holds one.
    if (this.packets.length >= PACKETS_PER_PAGE) this.flush(PageFlag.None);
    // opusscript returns a view into its own memory, reused by the next call.
    this.packets.push(Buffer.from(this.opus.encode(pcm, FRAME_SAMPLES)));
    this.samples += realSamples;
  }

  private flush(flag: PageFlag): void {
    // A page's granule is where its last packet ends; on the last page that is the exact end of
    // the speech, which tells players to drop the padding.
    const granule = BigInt(PRE_SKIP + this.samples * GRANULE_PER_SAMPLE);
    this.pages.push(page(this.packets, flag, granule, this.serial, this.sequence++));
    this.packets = [];
  }
}
