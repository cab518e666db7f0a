import { truncate } from "../session/event-text.js";
import {
  type FunctionCallPart,
  type FunctionResponsePart,
  functionCallsOf,
  isRealUserMessage,
  type MediaPart,
  type SessionEvent,
} from "../session/events.js";
import type { StoredSession } from "../session/store.js";
import type { SentToolFile } from "./tool-files.js";

export const BUDGET_EXHAUSTED = "tool-call budget exhausted";
/** How often one call (same name, same arguments) may run in a turn before it is refused. */
export const REPEAT_LIMIT = 2;
const REPEATED = "this exact call (same name and arguments) already ran twice in this turn";
const MAX_EARLIER_RESULT_CHARS = 1_000;
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

/** Stored events of the current turn: everything after the chat's last real user message. */
function currentTurn(events: readonly StoredSession[]): readonly StoredSession[] {
  for (let i = events.length - 1; i >= 0; i--) {
    if (isRealUserMessage((events[i] as StoredSession).event)) return events.slice(i + 1);
  }
  return events;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== "object" || value === null) return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((key) => [key, canonical(record[key])]),
  );
}

/** Identifies a call by name and arguments, whatever their key order. */
const callKey = (name: string, args: Record<string, unknown> | undefined): string =>
  JSON.stringify([name, canonical(args ?? {})]);

/** A response Koroku gave instead of running the call: it does not count as a run. */
const isRefusal = (response: Record<string, unknown> | undefined): boolean =>
  typeof response?.error === "string" &&
  (response.error === BUDGET_EXHAUSTED || response.error.startsWith(REPEATED));

type Run = { count: number; response: Record<string, unknown> | undefined };

/** How often each call ran in the current turn, and what it returned the last time. */
function runsThisTurn(events: readonly StoredSession[]): Map<string, Run> {
  const runs = new Map<string, Run>();
  for (const stored of currentTurn(events)) {
    for (const part of stored.event.parts) {
      if (part.kind !== "function_response" || isRefusal(part.response)) continue;
      const key = callKey(part.call?.name ?? part.name, part.call?.args);
      runs.set(key, { count: (runs.get(key)?.count ?? 0) + 1, response: part.response });
    }
  }
  return runs;
}

/**
 * What to do with each call of one model response: `run` it, refuse it because the `budget` is
 * spent, or refuse it as a `repeat` of a call that already ran REPEAT_LIMIT times this turn (its
 * earlier result is the stored one, or that of call `index` of this batch). A refused repeat
 * still takes a place in the budget: a model stuck in a loop must not get unlimited rounds.
 */
export type CallPlan =
  | { kind: "run" }
  | { kind: "budget" }
  | { kind: "repeat"; earlier: Record<string, unknown> | undefined }
  | { kind: "repeat"; index: number };

export function planCalls(
  calls: readonly FunctionCallPart[],
  remaining: number,
  events: readonly StoredSession[],
): CallPlan[] {
  const runs = runsThisTurn(events);
  const latestInBatch = new Map<string, number>();
  let slots = Math.max(0, remaining);
  return calls.map((call, index): CallPlan => {
    if (slots === 0) return { kind: "budget" };
    slots--;
    const key = callKey(call.name, call.args);
    const run = runs.get(key) ?? { count: 0, response: undefined };
    if (run.count >= REPEAT_LIMIT) {
      const inBatch = latestInBatch.get(key);
      return inBatch === undefined
        ? { kind: "repeat", earlier: run.response }
        : { kind: "repeat", index: inBatch };
    }
    runs.set(key, { ...run, count: run.count + 1 });
    latestInBatch.set(key, index);
    return { kind: "run" };
  });
}

/** The error a refused repeat answers with: what the call returned, and to try something else. */
export function repeatRefusal(earlier: Record<string, unknown> | undefined): { error: string } {
  const result = truncate(JSON.stringify(earlier ?? {}), MAX_EARLIER_RESULT_CHARS);
  return {
    error: `${REPEATED}, so it was not run again. Its last result was: ${result}. Running it again will not change that: change approach (other arguments, another tool, or answer with what you have).`,
  };
}

export function responsePart(
  call: FunctionCallPart,
  response: Record<string, unknown>,
  files?: MediaPart[],
): FunctionResponsePart {
  const part: FunctionResponsePart = {
    kind: "function_response",
    name: call.name,
    response,
    call: call.args === undefined ? { name: call.name } : { name: call.name, args: call.args },
  };
  if (call.id !== undefined) part.id = call.id;
  if (files !== undefined && files.length > 0) part.files = files;
  return part;
}

/** The last stored event, when it is a model event whose function calls have no responses yet. */
export function danglingCalls(events: readonly StoredSession[]): StoredSession | undefined {
  const last = events.at(-1);
  if (last?.event.role !== "model") return undefined;
  return functionCallsOf(last.event).length > 0 ? last : undefined;
}

/**
 * A model turn whose function calls never got responses (the process died mid-tool) would make
 * Gemini reject every later request; answer those calls with an error the model can read. A call
 * whose file reached Telegram (`sent`, recorded as Telegram took it) is answered with what it did,
 * so that the model does not send the file again.
 */
export function repairDanglingCalls(
  events: readonly StoredSession[],
  sent: readonly SentToolFile[] = [],
): { event: SessionEvent; toolCalls: number } | undefined {
  const last = events.at(-1);
  if (last?.event.role !== "model") return undefined;
  const calls = functionCallsOf(last.event);
  if (calls.length === 0) return undefined;
  const done = new Map(sent.filter((s) => s.event === last.id).map((s) => [s.call, s]));
  return {
    event: {
      v: 1,
      event_type: "session",
      role: "user",
      parts: calls.map((call, i) => {
        const record = done.get(i);
        return record
          ? responsePart(call, record.response, record.files)
          : responsePart(call, { error: INTERRUPTED });
      }),
    },
    // They may have run: count them, so a crash can never let a turn exceed its budget.
    toolCalls: calls.length,
  };
}
