import type { EventPart, MediaPart, SessionEvent } from "../../src/session/events.js";
import type { StoredSession } from "../../src/session/store.js";

/** A session event of these parts. */
export const eventOf = (role: "user" | "model", parts: EventPart[]): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts,
});

/** A session event holding one text part: what a person typed, or a model's plain answer. */
export const said = (text: string, role: "user" | "model" = "user"): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts: [{ kind: "text", text }],
});

/** An event as the store gives it back, with only what views of it read. */
export const storedSession = (event: SessionEvent, id: number): StoredSession => ({
  id,
  kind: "session",
  event,
  createdAt: "2026-12-05T10:00:00.000Z",
  promptTokens: null,
  estimatedTokens: 0,
  toolCalls: 0,
  updateId: null,
});

/** A stored file of a message or an answer, by its kind and type. */
export const mediaPart = (
  fields: Partial<MediaPart> & Pick<MediaPart, "media" | "mimeType">,
): MediaPart => ({ kind: "media", sha256: "a".repeat(64), size: 1_000, ...fields });
