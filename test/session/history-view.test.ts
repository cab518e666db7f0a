import { describe, expect, it } from "vitest";
import { FRESH_START_NOTE } from "../../src/recall/fresh-start.js";
import { historyLines, historyLineText } from "../../src/session/history-view.js";
import type { StoredCompaction } from "../../src/session/store.js";
import { eventOf, mediaPart, storedSession } from "../helpers/events.js";

describe("historyLines", () => {
  it("shows an answer's text, then the voice note Koroku spoke of it with what it said", () => {
    const answer = eventOf("model", [
      { kind: "text", text: "Run this: ```npm ci```" },
      mediaPart({
        media: "voice",
        mimeType: "audio/ogg",
        duration: 2,
        transcript: "Run this: (The code is in the message.)",
        spoken: true,
      }),
    ]);
    expect(historyLines([storedSession(answer, 1)])).toEqual([
      { kind: "assistant", text: "Run this: ```npm ci```" },
      { kind: "assistant", text: "🎤 0:02 «Run this: (The code is in the message.)»" },
    ]);
  });

  it("leaves out a picture the model made while thinking", () => {
    const answer = eventOf("model", [
      mediaPart({ media: "photo", mimeType: "image/png", thought: true }),
      { kind: "text", text: "Here is my final answer." },
    ]);
    expect(historyLines([storedSession(answer, 1)])).toEqual([
      { kind: "assistant", text: "Here is my final answer." },
    ]);
  });

  it("shows where /new started afresh as that, not as a summary", () => {
    const fresh: StoredCompaction = {
      id: 3,
      kind: "compaction",
      event: {
        v: 1,
        event_type: "compaction",
        summary: [{ kind: "text", text: FRESH_START_NOTE }],
        summarized_events: 2,
      },
      createdAt: "2026-12-05T10:00:00.000Z",
      coversFromId: 1,
      coversToId: 2,
      estimatedTokens: 0,
    };
    expect(historyLines([fresh])).toEqual([{ kind: "fresh" }]);
    expect(historyLineText({ kind: "fresh" })).toBe("[A fresh conversation started here (/new)]");
  });

  it("shows a user's photo with its caption", () => {
    const sent = eventOf("user", [
      mediaPart({ media: "photo", mimeType: "image/jpeg" }),
      { kind: "text", text: "look" },
    ]);
    expect(historyLines([storedSession(sent, 1)])).toEqual([
      { kind: "user", text: "📷 photo «look»" },
    ]);
  });
});
