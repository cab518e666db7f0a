import { describe, expect, it } from "vitest";
import { sniff } from "../../src/media/sniff.js";
import { isoMedia, mp3Audio, oggAudio, wavAudio, webmVideo } from "../helpers/media-bytes.js";

// Bytes without a pattern, the same on every run (random ones could start like an MP3 frame).
const NOISE = Buffer.from(Array.from({ length: 4_096 }, (_, i) => (i * 7_919 + 13) % 251));
const ZIP = Buffer.from("PK\x03\x04\x14\0\0\0\x08\0rest of an archive", "latin1");

/** A segment: its marker, then its length (which counts itself) and what it holds. */
const segment = (marker: number, body: number[]) => [
  0xff,
  marker,
  (body.length + 2) >> 8,
  (body.length + 2) & 0xff,
  ...body,
];

/**
 * A JPEG as its segments lay it out: an EXIF block holding a thumbnail (a JPEG of its own, with
 * its own end marker), tables, then a scan whose coded data holds a stuffed 0xff00 and a restart
 * marker, then the end.
 */
const structuredJpeg = () => {
  const thumbnail = [0xff, 0xd8, 0xff, 0xd9];
  return Buffer.from([
    0xff,
    0xd8,
    ...segment(0xe1, [...Buffer.from("Exif\0\0"), ...thumbnail]),
    ...segment(
      0xdb,
      Array.from({ length: 65 }, (_, i) => i),
    ),
    ...segment(0xc0, [8, 0, 16, 0, 16, 1, 1, 0x11, 0]),
    ...segment(0xda, [1, 1, 0, 0, 0x3f, 0]),
    ...[0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56, 0x78],
    0xff,
    0xd9,
  ]);
};

describe("sniff", () => {
  it("takes a JPEG whose end is followed by more, as a Motion Photo's video, and no cut-off one", () => {
    const video = Buffer.concat([isoMedia("mp42"), NOISE]);
    const motionPhoto = Buffer.concat([structuredJpeg(), video]);
    expect(sniff(motionPhoto, "image/jpeg")).toEqual({ ok: true, mimeType: "image/jpeg" });
    // Cut inside the scan: the thumbnail's end marker must not pass for the image's.
    const cut = structuredJpeg().subarray(0, -4);
    expect(sniff(cut, "image/jpeg")).toEqual({ ok: false, problem: "damaged" });
    expect(sniff(Buffer.concat([cut, NOISE]), "image/jpeg")).toEqual({
      ok: false,
      problem: "damaged",
    });
  });

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
