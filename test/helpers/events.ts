import type { SessionEvent } from "../../src/session/events.js";

/** A session event holding one text part: what a person typed, or a model's plain answer. */
export const said = (text: string, role: "user" | "model" = "user"): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts: [{ kind: "text", text }],
});
