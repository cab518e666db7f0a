import {
  type FunctionCallPart,
  type FunctionResponsePart,
  functionCallsOf,
  isRealUserMessage,
  type SessionEvent,
} from "../session/events.js";
import type { StoredSession } from "../session/store.js";

export const BUDGET_EXHAUSTED = "tool-call budget exhausted";
export const INTERRUPTED =
  "interrupted: Koroku restarted before this tool call finished; it may or may not have run";

/**
 * Tool calls executed since the chat's last real user message, read from the stored history so
 * the budget holds across restarts.
 */
export function toolCallsSinceUserMessage(events: readonly StoredSession[]): number {
  let count = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const stored = events[i] as StoredSession;
    if (isRealUserMessage(stored.event)) break;
    count += stored.toolCalls;
  }
  return count;
}

export function responsePart(
  call: FunctionCallPart,
  response: Record<string, unknown>,
): FunctionResponsePart {
  const part: FunctionResponsePart = {
    kind: "function_response",
    name: call.name,
    response,
    call: call.args === undefined ? { name: call.name } : { name: call.name, args: call.args },
  };
  if (call.id !== undefined) part.id = call.id;
  return part;
}

/**
 * A model turn whose function calls never got responses (the process died mid-tool) would make
 * Gemini reject every later request; answer those calls with an error the model can read.
 */
export function repairDanglingCalls(
  events: readonly StoredSession[],
): { event: SessionEvent; toolCalls: number } | undefined {
  const last = events.at(-1);
  if (last?.event.role !== "model") return undefined;
  const calls = functionCallsOf(last.event);
  if (calls.length === 0) return undefined;
  return {
    event: {
      v: 1,
      event_type: "session",
      role: "user",
      parts: calls.map((call) => responsePart(call, { error: INTERRUPTED })),
    },
    // They may have run: count them, so a crash can never let a turn exceed its budget.
    toolCalls: calls.length,
  };
}
