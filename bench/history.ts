import { SKIP_THOUGHT_SIGNATURE } from "../src/agent/gemini-client.js";
import type { SessionEvent } from "../src/session/events.js";

/** Realistic stored conversations for the benchmarks, the same every run. */

// Real thought signatures are opaque base64 blobs of a few hundred bytes.
const SIGNATURE = Buffer.from(Array.from({ length: 384 }, (_, i) => (i * 31 + 7) % 256)).toString(
  "base64",
);
const WORDS =
  "remind me what we decided about the trip and the budget then check my notes for the dentist appointment next week".split(
    " ",
  );

function prose(seed: number, length: number): string {
  let out = "";
  for (let i = seed; out.length < length; i++) out += `${WORDS[(i * 5) % WORDS.length]} `;
  return out.slice(0, length);
}

const session = (role: "user" | "model", parts: SessionEvent["parts"]): SessionEvent => ({
  v: 1,
  event_type: "session",
  role,
  parts,
});

export const userText = (seed: number): SessionEvent =>
  session("user", [{ kind: "text", text: prose(seed, 60 + (seed % 5) * 30) }]);

export const modelText = (seed: number): SessionEvent =>
  session("model", [
    { kind: "text", text: prose(seed + 3, 150 + (seed % 7) * 40), thoughtSignature: SIGNATURE },
  ]);

/**
 * One turn as it is stored: user text, a read_file call, its result, the answer. The call carries
 * the placeholder signature, so a strict Gemini accepts the history whoever signed it.
 */
export function historyTurn(seed: number): SessionEvent[] {
  const call = { name: "read_file", id: `call-${seed}`, args: { path: `notes/${seed % 97}.md` } };
  return [
    userText(seed),
    session("model", [
      { kind: "function_call", ...call, thoughtSignature: SKIP_THOUGHT_SIGNATURE },
    ]),
    session("user", [
      {
        kind: "function_response",
        name: call.name,
        id: call.id,
        response: { output: prose(seed + 11, 200 + ((seed * 137) % 300)) },
        call: { name: call.name, args: call.args },
      },
    ]),
    modelText(seed),
  ];
}

/** The index-th event of a history made of such turns. */
export function historyEvent(index: number): SessionEvent {
  return historyTurn(Math.floor(index / 4))[index % 4] as SessionEvent;
}
