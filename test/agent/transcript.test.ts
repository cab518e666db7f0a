import { describe, expect, it } from "vitest";
import { transcriptOf } from "../../src/agent/transcript.js";
import { eventOf, mediaPart, storedSession } from "../helpers/events.js";

const voice = { media: "voice", mimeType: "audio/ogg", size: 2_048, duration: 3 } as const;

describe("transcriptOf", () => {
  it("tells of the user's voice note with its words, once of an answer Koroku also spoke", () => {
    const asked = eventOf("user", [mediaPart({ ...voice, transcript: "what is on today" })]);
    const answer = eventOf("model", [
      { kind: "text", text: "A dentist at 3." },
      mediaPart({ ...voice, transcript: "A dentist at 3.", spoken: true }),
      mediaPart({ media: "photo", mimeType: "image/png", thought: true }),
    ]);
    expect(transcriptOf([storedSession(asked, 1), storedSession(answer, 2)]).split("\n")).toEqual([
      "User sent [voice note 0:03, audio/ogg, 2 KB: «what is on today»]",
      "Koroku: A dentist at 3.",
    ]);
  });
});
