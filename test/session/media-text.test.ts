import { describe, expect, it } from "vitest";
import { eventText } from "../../src/session/event-text.js";
import type { MediaPart } from "../../src/session/events.js";
import { parseStoredEvent, toContent } from "../../src/session/events.js";
import { clockTime, mediaLine, mediaNote } from "../../src/session/media-text.js";

const voice: MediaPart = {
  kind: "media",
  media: "voice",
  sha256: "a".repeat(64),
  mimeType: "audio/ogg",
  size: 12_345,
  duration: 12,
  transcript: "buy oat milk and call Mira",
  thoughtSignature: "c2lnbmF0dXJl",
};

describe("media parts as text", () => {
  it("shows /history lines for voice notes, photos and documents", () => {
    expect(mediaLine(voice)).toBe("🎤 0:12 «buy oat milk and call Mira»");
    const photo: MediaPart = { ...voice, media: "photo", mimeType: "image/jpeg" };
    delete photo.transcript;
    delete photo.duration;
    expect(mediaLine(photo, "my cat")).toBe("📷 photo «my cat»");
    const pdf: MediaPart = { ...photo, media: "document", name: "report.pdf" };
    expect(mediaLine(pdf)).toBe("📄 report.pdf");
    expect(clockTime(3723)).toBe("1:02:03");
  });

  it("makes transcripts searchable and estimates audio by its length", () => {
    const text = eventText({ v: 1, event_type: "session", role: "user", parts: [voice] });
    expect(text.searchText).toContain("oat milk");
    expect(text.searchText).toContain("voice note");
    expect(text.estimatedTokens).toBe(12 * 32);
  });

  it("round-trips through storage with its signature, and without bytes falls back to words", () => {
    const body = { v: 1, event_type: "session", role: "user", parts: [voice] };
    const parsed = parseStoredEvent(JSON.stringify(body));
    expect(parsed).toEqual({ ok: true, event: body });
    expect(
      parseStoredEvent(JSON.stringify({ ...body, parts: [{ ...voice, sha256: "x" }] })).ok,
    ).toBe(false);
    expect(toContent(body as never).parts).toEqual([
      { ...mediaNote(voice), thoughtSignature: "c2lnbmF0dXJl" },
    ]);
    expect(mediaNote(voice).text).toBe(
      "[voice note 0:12, audio/ogg, 12 KB: «buy oat milk and call Mira»]",
    );
  });
});
