import { type DestinationStream, pino } from "pino";

/**
 * Unless LOG_LEVEL says otherwise, the terminal chat logs errors only: a failed turn already
 * says so in its `✗` line, and a retry that worked leaves nothing to do.
 */
export const TERMINAL_LOG_LEVEL = "error";

type LogRecord = { level: number; msg?: string; err?: { message?: string }; reason?: unknown };

/**
 * Logs that share the screen with the conversation: each record one line a person reads
 * ("warn: Gemini call failed; retrying: …"), not pino's JSON with a stack.
 */
export function readableLogLines(write: (line: string) => void): DestinationStream {
  return {
    write(json: string) {
      const record = JSON.parse(json) as LogRecord;
      const label = pino.levels.labels[record.level] ?? "log";
      // A failure is logged with its error, or (a Gemini call's) with its reason, scrubbed already.
      const reason =
        record.err?.message ?? (typeof record.reason === "string" ? record.reason : undefined);
      const line = `${label}: ${record.msg ?? ""}${reason ? `: ${reason}` : ""}`;
      write(`${line.replace(/\s*\n\s*/g, " ")}\n`);
    },
  };
}
