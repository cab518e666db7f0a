import { isFreshStartNote } from "../recall/fresh-start.js";
import { truncate } from "./event-text.js";
import {
  type EventPart,
  type ExecutableCodePart,
  isRealUserMessage,
  type MediaPart,
  type ServerToolCallPart,
  serverToolName,
  textOf,
} from "./events.js";
import { mediaLine } from "./media-text.js";
import type { StoredEvent } from "./store.js";

export type HistoryLine =
  | { kind: "user" | "task" | "summary"; text: string }
  /** Where /new started a fresh context in the same conversation. */
  | { kind: "fresh" }
  /** `mark`: the answer was stopped by the user, or its stream was cut ("(stopped)", "(cut off)"). */
  | { kind: "assistant"; text: string; mark?: string }
  | { kind: "tool"; ok: boolean; name: string; args: string };

/** How /history shows where /new started afresh. */
export const FRESH_START_LINE = "A fresh conversation started here (/new)";

const MAX_ARGS_CHARS = 200;
const DEFAULT_HISTORY_TURNS = 10;
const MAX_HISTORY_TURNS = 100;
/** What `/history`'s argument may be, for its usage line. */
export const HISTORY_TURNS_RULE = `n is a number of turns from 1 to ${MAX_HISTORY_TURNS} (default ${DEFAULT_HISTORY_TURNS})`;

/** The turns `/history [n]` asks for; undefined when `arg` is no such number. */
export function historyTurns(arg: string): number | undefined {
  const turns = arg.trim() === "" ? DEFAULT_HISTORY_TURNS : Number(arg);
  return Number.isInteger(turns) && turns >= 1 && turns <= MAX_HISTORY_TURNS ? turns : undefined;
}

/** How a stored answer ended short of what Gemini meant to write, as the replay marks it. */
function markOf(event: { stopped?: true; cut?: true }): string | undefined {
  if (event.stopped) return "(stopped)";
  return event.cut ? "(cut off)" : undefined;
}

/** Tool arguments as one short line: a write_file's whole content would drown the replay. */
export function argsText(args: Record<string, unknown> | undefined): string {
  return truncate(JSON.stringify(args ?? {}), MAX_ARGS_CHARS);
}

/** Whether a server-side tool call or code run of a model turn worked, from its result part. */
function serverOutcome(parts: readonly EventPart[], call: ServerToolCallPart | ExecutableCodePart) {
  for (const p of parts) {
    if (call.kind === "server_tool_call" && p.kind === "server_tool_response" && p.id === call.id) {
      return !(p.response && "error" in p.response);
    }
    if (call.kind === "executable_code" && p.kind === "code_execution_result") {
      if (call.id === undefined || p.id === call.id) return p.outcome === "OUTCOME_OK";
    }
  }
  // A search Gemini reported no response for did not fail visibly; code without a result did.
  return call.kind === "server_tool_call";
}

/** The tool line of a search, a page read or a code run Gemini did itself. */
function serverToolLine(parts: readonly EventPart[], part: EventPart): HistoryLine | undefined {
  if (part.kind === "server_tool_call") {
    return {
      kind: "tool",
      ok: serverOutcome(parts, part),
      name: serverToolName(part.toolType),
      args: argsText(part.args),
    };
  }
  if (part.kind === "executable_code") {
    const args = argsText({ code: part.code ?? "" });
    return { kind: "tool", ok: serverOutcome(parts, part), name: "code_execution", args };
  }
  return undefined;
}

/**
 * Stored events as the replay shows them: what the user said and sent (a line per file, with
 * its caption or transcript), what Koroku answered (thoughts hidden), one line per tool call that
 * says whether it worked (Gemini's own searches and code runs included), and summaries.
 */
export function historyLines(events: readonly StoredEvent[]): HistoryLine[] {
  const lines: HistoryLine[] = [];
  for (const stored of events) {
    if (stored.kind === "compaction") {
      const text = textOf(stored.event.summary);
      // /new's note is for the model, not a summary of anything.
      lines.push(isFreshStartNote(text) ? { kind: "fresh" } : { kind: "summary", text });
      continue;
    }
    const { event } = stored;
    // Pictures a tool made (generate_image) are kept beside its responses: they are Koroku's.
    const kind =
      event.role === "model" || !isRealUserMessage(event)
        ? "assistant"
        : event.origin === "scheduled_task"
          ? "task"
          : "user";
    let text = textOf(event.parts).trim();
    // Pictures the model made while thinking are never shown; the voice notes Koroku spoke of
    // its answer follow the answer's text, each with its own words.
    const media = event.parts.filter((p): p is MediaPart => p.kind === "media" && !p.thought);
    for (const part of media.filter((p) => !p.spoken)) {
      // The words of a message with media are its caption, shown once, with the first file.
      lines.push({ kind, text: mediaLine(part, text || undefined) });
      text = "";
    }
    if (text) {
      const mark = kind === "assistant" ? markOf(event) : undefined;
      // An answer stopped before its first word is stored as the mark itself.
      lines.push(mark === undefined || mark === text ? { kind, text } : { kind, text, mark });
    }
    for (const part of media.filter((p) => p.spoken)) lines.push({ kind, text: mediaLine(part) });
    for (const part of event.parts) {
      const server = serverToolLine(event.parts, part);
      if (server) lines.push(server);
      if (part.kind !== "function_response") continue;
      const ok = !(part.response && "error" in part.response);
      lines.push({
        kind: "tool",
        ok,
        name: part.call?.name ?? part.name,
        args: argsText(part.call?.args),
      });
      // What the call sent to the chat (send_file), as Koroku's own files, with their caption.
      const caption = part.call?.args?.caption;
      for (const file of part.files ?? []) {
        const text = mediaLine(file, typeof caption === "string" ? caption : undefined);
        lines.push({ kind: "assistant", text });
      }
    }
  }
  return lines;
}

/** The plain-text form the terminal chat prints. */
export function historyLineText(line: HistoryLine): string {
  switch (line.kind) {
    case "user":
      return `You: ${line.text}`;
    case "task":
      return `Scheduled task: ${line.text}`;
    case "assistant":
      return `Koroku: ${line.text}${line.mark ? ` ${line.mark}` : ""}`;
    case "summary":
      return `[Summary of earlier conversation] ${line.text}`;
    case "fresh":
      return `[${FRESH_START_LINE}]`;
    case "tool":
      return `${line.ok ? "✓" : "✗"} ${line.name} ${line.args}`;
  }
}
