import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { createVoiceEncoder, EncodingFailedError } from "../../src/voice/encoder-pool.js";
import { OggOpusEncoder, TTS_SAMPLE_RATE } from "../../src/voice/ogg-opus.js";
import { checkOggOpus } from "../fakes/ogg-opus-check.js";
import { runModuleScript } from "../helpers/module-script.js";

const BUILT_POOL = join(import.meta.dirname, "../../dist/src/voice/encoder-pool.js");

/** A gliding tone as Gemini's PCM (24 kHz mono, 16-bit), `seconds` long. */
function speech(seconds: number): Buffer {
  const samples = Math.round(seconds * TTS_SAMPLE_RATE);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    const t = i / TTS_SAMPLE_RATE;
    pcm.writeInt16LE(Math.round(6_000 * Math.sin(2 * Math.PI * (150 + 40 * t) * t)), i * 2);
  }
  return pcm;
}

const secondsOf = (bytes: Buffer) => {
  const info = checkOggOpus(bytes);
  if ("problem" in info) throw new Error(info.problem);
  return info.seconds;
};

describe("the voice encoder's threads", () => {
  it("make the voice note the encoder makes in process, from PCM in pieces", async () => {
    const encoder = createVoiceEncoder(1);
    try {
      const pcm = speech(2.5);
      // Pieces as Gemini's parts come: of any length, an odd byte among them.
      const pieces = [pcm.subarray(0, 1_001), pcm.subarray(1_001, 60_000), pcm.subarray(60_000)];
      const voice = await encoder.encode(pieces);
      const here = new OggOpusEncoder();
      here.write(pcm);
      const expected = here.finish();
      expect(voice.seconds).toBe(expected.seconds);
      expect(secondsOf(voice.bytes)).toBeCloseTo(2.5, 3);
      // The same packets: only the stream's random serial number (and so the CRCs) differ.
      expect(voice.bytes.byteLength).toBe(expected.bytes.byteLength);
    } finally {
      await encoder.stop();
    }
  });

  it("give each of many notes at once back to its caller", async () => {
    const encoder = createVoiceEncoder(2);
    try {
      const lengths = [0.4, 3, 1.2, 0.02, 2.2, 0.8];
      const voices = await Promise.all(lengths.map((s) => encoder.encode([speech(s)])));
      expect(voices.map((v) => v.seconds)).toEqual(lengths);
      expect(voices.map((v) => secondsOf(v.bytes))).toEqual(
        lengths.map((s) => expect.closeTo(s, 3)),
      );
    } finally {
      await encoder.stop();
    }
  });

  it("a stop lets the notes under way finish; after it, a note fails with the reason", async () => {
    const encoder = createVoiceEncoder(1);
    const underWay = encoder.encode([speech(4)]);
    await encoder.stop();
    await expect(underWay).resolves.toMatchObject({ seconds: 4 });
    const late = encoder.encode([speech(1)]);
    await expect(late).rejects.toBeInstanceOf(EncodingFailedError);
    await expect(late).rejects.toThrow("encoding it failed: the service is stopping");
  });

  it("keep the process alive while a note is encoded and while a stop waits, when nothing else does", async () => {
    // Idle threads are unreferenced: a process whose only work left is a note, or the stop,
    // would otherwise exit with 0 in the middle of it.
    const script = `
      import { createVoiceEncoder } from ${JSON.stringify(pathToFileURL(BUILT_POOL).href)};
      const encoder = createVoiceEncoder(1);
      const second = new Uint8Array(${TTS_SAMPLE_RATE * 2});
      // The first note starts the thread; the second finds it running and otherwise idle.
      console.log((await encoder.encode([second])).seconds);
      console.log((await encoder.encode([second, second])).seconds);
      await encoder.stop();
      console.log("stopped");
    `;
    expect(await runModuleScript(script)).toEqual({ code: 0, stdout: "1\n2\nstopped\n" });
  });
});
