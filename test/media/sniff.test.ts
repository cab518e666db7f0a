import { describe, expect, it } from "vitest";
import { sniff } from "../../src/media/sniff.js";
import { isoMedia, mp3Audio, oggAudio, wavAudio, webmVideo } from "../helpers/media-bytes.js";

// Bytes without a pattern, the same on every run (random ones could start like an MP3 frame).
const NOISE = Buffer.from(Array.from({ length: 4_096 }, (_, i) => (i * 7_919 + 13) % 251));
const ZIP = Buffer.from("PK\x03\x04\x14\0\0\0\x08\0rest of an archive", "latin1");

describe("sniff", () => {
  it("takes audio and video in the containers Gemini reads, as claimed when the container allows it", () => {
    expect(sniff(oggAudio(), "audio/ogg")).toEqual({ ok: true, mimeType: "audio/ogg" });
    expect(sniff(isoMedia("M4A "), "audio/m4a")).toEqual({ ok: true, mimeType: "audio/m4a" });
    expect(sniff(isoMedia("isom"), "video/mp4")).toEqual({ ok: true, mimeType: "video/mp4" });
    expect(sniff(isoMedia("qt  "), "video/quicktime")).toEqual({
      ok: true,
      mimeType: "video/quicktime",
    });
    expect(sniff(webmVideo(), "video/webm")).toEqual({ ok: true, mimeType: "video/webm" });
    expect(sniff(wavAudio(), "audio/wav")).toEqual({ ok: true, mimeType: "audio/wav" });
    expect(sniff(mp3Audio(), "audio/mpeg")).toEqual({ ok: true, mimeType: "audio/mpeg" });
    const frame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(400)]);
    expect(sniff(frame, "audio/mpeg")).toEqual({ ok: true, mimeType: "audio/mpeg" });
    const adts = Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80]), Buffer.alloc(400)]);
    expect(sniff(adts, "audio/aac")).toEqual({ ok: true, mimeType: "audio/aac" });
  });

  it("sends audio or video as what its bytes are when the claim is another container", () => {
    expect(sniff(oggAudio(), "audio/mpeg")).toEqual({ ok: true, mimeType: "audio/ogg" });
    expect(sniff(mp3Audio(), "audio/ogg")).toEqual({ ok: true, mimeType: "audio/mpeg" });
    expect(sniff(webmVideo(), "video/mp4")).toEqual({ ok: true, mimeType: "video/webm" });
    expect(sniff(isoMedia("isom"), "audio/ogg")).toEqual({ ok: true, mimeType: "audio/m4a" });
  });

  it("refuses a ZIP sent as a voice note, random bytes as video/mp4, and text as audio", () => {
    expect(sniff(ZIP, "audio/ogg")).toEqual({ ok: false, problem: "damaged" });
    expect(sniff(NOISE, "video/mp4")).toEqual({ ok: false, problem: "damaged" });
    expect(sniff(Buffer.from("just some words"), "audio/mpeg")).toEqual({
      ok: false,
      problem: "damaged",
    });
    expect(sniff(Buffer.alloc(500, 4), "video/mp4")).toEqual({ ok: false, problem: "damaged" });
  });

  it("refuses a text file that holds NUL characters, as a binary file does", () => {
    expect(sniff(Buffer.from("a\0b\0"), "text/plain")).toEqual({ ok: false, problem: "not text" });
    expect(sniff(Buffer.from("plain words\n"), "text/plain")).toEqual({
      ok: true,
      mimeType: "text/plain",
    });
  });
});
