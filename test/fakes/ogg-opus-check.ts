/**
 * Checks that bytes are an Ogg Opus stream as Telegram plays it as a voice note (RFC 3533 pages,
 * RFC 7845 headers): every page's capture pattern, version and CRC; one logical stream; OpusHead
 * then OpusTags on pages of their own; audio packets after; the last page marked end of stream.
 * Written apart from the encoder (a bitwise CRC, no shared code) so that it can catch its bugs.
 */
export type OggOpusInfo = {
  channels: number;
  inputSampleRate: number;
  preSkip: number;
  audioPackets: number;
  /** Seconds played: the last granule position less the pre-skip, at 48 kHz. */
  seconds: number;
};

function crcBitwise(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 24;
    for (let k = 0; k < 8; k++) {
      crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
    }
    crc >>>= 0;
  }
  return crc;
}

export function checkOggOpus(input: Uint8Array): OggOpusInfo | { problem: string } {
  const bytes = Buffer.from(input);
  const packets: Buffer[] = [];
  let partial: Buffer[] = [];
  let offset = 0;
  let serial: number | undefined;
  let sequence = 0;
  let lastGranule = 0n;
  let ended = false;
  while (offset < bytes.byteLength) {
    if (ended) return { problem: "data after the end-of-stream page" };
    if (bytes.byteLength - offset < 27) return { problem: `a cut page header at ${offset}` };
    if (bytes.toString("latin1", offset, offset + 4) !== "OggS") {
      return { problem: `no OggS capture pattern at ${offset}` };
    }
    if (bytes[offset + 4] !== 0) return { problem: "Ogg version is not 0" };
    const flags = bytes[offset + 5] as number;
    const granule = bytes.readBigUInt64LE(offset + 6);
    const pageSerial = bytes.readUInt32LE(offset + 14);
    const pageSequence = bytes.readUInt32LE(offset + 18);
    const crc = bytes.readUInt32LE(offset + 22);
    const segments = bytes[offset + 26] as number;
    const lacing = bytes.subarray(offset + 27, offset + 27 + segments);
    const bodyLength = lacing.reduce((sum, value) => sum + value, 0);
    const end = offset + 27 + segments + bodyLength;
    if (end > bytes.byteLength) return { problem: `a cut page at ${offset}` };
    const copy = Buffer.from(bytes.subarray(offset, end));
    copy.writeUInt32LE(0, 22);
    if (crcBitwise(copy) !== crc) return { problem: `page ${pageSequence} has a wrong CRC` };
    if (sequence === 0 && !(flags & 2)) return { problem: "the first page is not marked BOS" };
    if (sequence > 0 && flags & 2) return { problem: "a BOS flag after the first page" };
    serial ??= pageSerial;
    if (pageSerial !== serial) return { problem: "more than one logical stream" };
    if (pageSequence !== sequence)
      return { problem: `page ${sequence} is numbered ${pageSequence}` };
    if (granule < lastGranule) return { problem: "granule positions go backwards" };
    lastGranule = granule;
    let at = offset + 27 + segments;
    for (const value of lacing) {
      partial.push(bytes.subarray(at, at + value));
      at += value;
      if (value < 255) {
        packets.push(Buffer.concat(partial));
        partial = [];
      }
    }
    ended = (flags & 4) !== 0;
    sequence++;
    offset = end;
  }
  if (!ended) return { problem: "no end-of-stream page" };
  if (partial.length > 0) return { problem: "a packet is cut at the end" };
  const [head, tags, ...audio] = packets;
  if (head?.toString("latin1", 0, 8) !== "OpusHead" || head.byteLength < 19) {
    return { problem: "the first packet is not an OpusHead" };
  }
  if (head[8] !== 1) return { problem: "OpusHead version is not 1" };
  if (tags?.toString("latin1", 0, 8) !== "OpusTags") {
    return { problem: "the second packet is not OpusTags" };
  }
  if (audio.length === 0) return { problem: "no audio packets" };
  const preSkip = head.readUInt16LE(10);
  return {
    channels: head[9] as number,
    inputSampleRate: head.readUInt32LE(12),
    preSkip,
    audioPackets: audio.length,
    seconds: Number(lastGranule - BigInt(preSkip)) / 48_000,
  };
}
