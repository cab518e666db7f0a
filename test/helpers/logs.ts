import { createLogger, type Logger } from "../../src/logger.js";

export type LogLine = { level: number; msg: string } & Record<string, unknown>;

/** A real pino logger whose JSON lines are collected for assertions. */
export function captureLogger(secrets: readonly string[] = []): {
  logger: Logger;
  lines: LogLine[];
} {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level: "debug",
    secrets,
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  });
  return { logger, lines };
}
