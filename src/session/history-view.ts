import { truncate } from "./event-text.js";
import { textOf } from "./events.js";
import { mediaLine } from "./media-text.js";
import type { StoredEvent } from "./store.js";

export type HistoryLine =
  | { kind: "user" | "task" | "assistant" | "summary"; text: string }
  | { kind: "tool"; ok: boolean; name: string; args: string };

const MAX_ARGS_CHARS = 200;

/** Tool arguments as one short line: a write_file's whole content would drown the replay. */
export function argsText(args: Record<string, unknown> | undefined): string {
  return truncate(JSON.stringify(args ?? {}), MAX_ARGS_CHARS);
}

/**
 * Stored events as the replay shows them: what the user said and sent (a line per file, with
 * its caption or transcript), what Koroku answered (thoughts hidden), one line per tool call that says whether it worked, and summaries.
 */
export function historyLines(events: readonly StoredEvent[]): HistoryLine[] {
  const lines: HistoryLine[] = [];
  for (const stored of events) {
    if (stored.kind === "compaction") {
      lines.push({ kind: "summary", text: textOf(stored.event.summary) });
      continue;
    }
    const { event } = stored;
    const kind =
      event.role === "model" ? "assistant" : event.origin === "scheduled_task" ? "task" : "user";
    let text = textOf(event.parts).trim();
    for (const part of event.parts) {
      if (part.kind !== "media") continue;
      // The words of a message with media are its caption, shown once, with the first file.
      lines.push({ kind, text: mediaLine(part, text || undefined) });
      text = "";
    }
    if (text) lines.push({ kind, text });
    for (const part of event.parts) {
      if (part.kind !== "function_response") continue;
      const ok = !(part.response && "error" in part.response);
      lines.push({
        kind: "tool",
        ok,
        name: part.call?.name ?? part.name,
        args: argsText(part.call?.args),
      });
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
      return `Koroku: ${line.text}`;
    case "summary":
      return `[Summary of earlier conversation] ${line.text}`;
    case "tool":
      return `${line.ok ? "✓" : "✗"} ${line.name} ${line.args}`;
  }
}
