import OpusScript from "opusscript";
import { describe, expect, it } from "vitest";
import { sniff } from "../../src/media/sniff.js";
import { OggOpusEncoder, TTS_SAMPLE_RATE } from "../../src/voice/ogg-opus.js";
import { checkOggOpus } from "../fakes/ogg-opus-check.js";

/** A 440 Hz tone as Gemini's PCM: 16-bit little-endian, mono, 24 kHz. */
function tone(seconds: number, amplitude = 8_000): Buffer {
  const samples = Math.round(seconds * TTS_SAMPLE_RATE);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    pcm.writeInt16LE(
      Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / TTS_SAMPLE_RATE)),
      i * 2,
    );
  }
  return pcm;
}

/** The Opus packets of an Ogg stream after its two header packets (single-segment pages aside). */
function audioPackets(ogg: Buffer): Buffer[] {
  const packets: Buffer[] = [];
  let partial: Buffer[] = [];
  for (let offset = 0; offset < ogg.byteLength; ) {
    const segments = ogg[offset + 26] as number;
    let at = offset + 27 + segments;
    for (let i = 0; i < segments; i++) {
      const value = ogg[offset + 27 + i] as number;
      partial.push(ogg.subarray(at, at + value));
      at += value;
      if (value < 255) {
        packets.push(Buffer.concat(partial));
        partial = [];
      }
    }
    offset = at;
  }
  return packets.slice(2);
}

const rms = (pcm: Buffer) => {
  let sum = 0;
  for (let i = 0; i + 1 < pcm.byteLength; i += 2) sum += pcm.readInt16LE(i) ** 2;
  return Math.sqrt(sum / (pcm.byteLength / 2));
};

describe("OggOpusEncoder", () => {
  it("turns PCM written in odd-sized pieces into an Ogg Opus file of the same length", () => {
    const pcm = tone(2.37);
    const encoder = new OggOpusEncoder();
    // Pieces as a stream cuts them: not frame-aligned, one of them an odd number of bytes.
    for (let at = 0; at < pcm.byteLength; at += 7_777) {
      encoder.write(pcm.subarray(at, Math.min(at + 7_777, pcm.byteLength)));
    }
    expect(encoder.seconds).toBeCloseTo(2.37, 3);
    const voice = encoder.finish();
    expect(voice.seconds).toBeCloseTo(2.37, 3);
    const info = checkOggOpus(voice.bytes);
    expect(info).toEqual({
      channels: 1,
      inputSampleRate: 24_000,
      preSkip: 312,
      audioPackets: Math.ceil(2.37 * 50),
      seconds: expect.closeTo(2.37, 3),
    });
    // 32 kbit/s: about 4 KB a second of speech, far under Telegram's limits.
    expect(voice.bytes.byteLength).toBeLessThan(2.37 * 6_000);
    expect(sniff(voice.bytes, "audio/ogg")).toEqual({ ok: true, mimeType: "audio/ogg" });
  });

  it("decodes back to the tone it was given", () => {
    const pcm = tone(1);
    const encoder = new OggOpusEncoder();
    encoder.write(pcm);
    const { bytes } = encoder.finish();
    const decoder = new OpusScript(24_000, 1);
    const decoded = Buffer.concat(audioPackets(bytes).map((p) => Buffer.from(decoder.decode(p))));
    decoder.delete();
    expect(decoded.byteLength).toBe(50 * 480 * 2);
    // Lossy, but the tone's loudness survives (a broken stream decodes to silence or noise).
    expect(rms(decoded) / rms(pcm)).toBeGreaterThan(0.8);
    expect(rms(decoded) / rms(pcm)).toBeLessThan(1.2);
  });

  it("gives a valid stream for no audio, and refuses to be used after finishing", () => {
    const encoder = new OggOpusEncoder();
    const voice = encoder.finish();
    expect(voice.seconds).toBe(0);
    expect(checkOggOpus(voice.bytes)).toMatchObject({ audioPackets: 1, seconds: 0 });
    expect(() => encoder.write(Buffer.alloc(2))).toThrow(/already finished/);
  });

  it("the checker finds a damaged byte and a missing end of stream", () => {
    const encoder = new OggOpusEncoder();
    encoder.write(tone(0.5));
    const { bytes } = encoder.finish();
    const damaged = Buffer.from(bytes);
    damaged[damaged.byteLength - 10] = (damaged[damaged.byteLength - 10] as number) ^ 0xff;
    expect(checkOggOpus(damaged)).toEqual({ problem: expect.stringMatching(/wrong CRC/) });
    const lastPage = bytes.lastIndexOf(Buffer.from("OggS"));
    expect(checkOggOpus(bytes.subarray(0, lastPage))).toEqual({ problem: "no end-of-stream page" });
    expect(checkOggOpus(Buffer.from("ID3\x03 an mp3"))).toMatchObject({
      problem: expect.any(String),
    });
  });
});
