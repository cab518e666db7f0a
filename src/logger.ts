import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger } from "pino";

const REDACTED = "[REDACTED]";
// Bot tokens travel inside Bot API URLs (/bot<token>/method); catch them even when we don't know the token.
const BOT_TOKEN_IN_URL = /bot\d{3,}:[A-Za-z0-9_-]{20,}/g;

export function createScrubber(secrets: readonly (string | undefined)[]): (text: string) => string {
  const known = secrets.filter((s): s is string => typeof s === "string" && s.length >= 4);
  return (text) => {
    let out = text.replace(BOT_TOKEN_IN_URL, `bot${REDACTED}`);
    for (const secret of known) out = out.split(secret).join(REDACTED);
    return out;
  };
}

function scrubValue(value: unknown, scrub: (s: string) => string, depth: number): unknown {
  if (typeof value === "string") return scrub(value);
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    return {
      type: value.name,
      message: scrub(value.message),
      stack: value.stack ? scrub(value.stack) : undefined,
    };
  }
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, scrub, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = scrubValue(v, scrub, depth + 1);
  return out;
}

export type LoggerOptions = {
  level: string;
  /** Values that must never reach a log line: bot token, API key, webhook secret. */
  secrets: readonly (string | undefined)[];
  /** Where JSON lines go; defaults to stdout (pretty-printed when stdout is a terminal). */
  destination?: DestinationStream;
};

export function createLogger(options: LoggerOptions): Logger {
  const scrub = createScrubber(options.secrets);
  const pretty = !options.destination && process.stdout.isTTY;
  const base = {
    level: options.level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      log: (object: Record<string, unknown>) =>
        scrubValue(object, scrub, 0) as Record<string, unknown>,
    },
    hooks: {
      logMethod(this: Logger, args: Parameters<Logger["info"]>, method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === "string" ? scrub(a) : a)),
        );
      },
    },
    serializers: { err: (err: unknown) => scrubValue(err, scrub, 0) },
  };
  if (pretty) return pino({ ...base, transport: { target: "pino-pretty" } });
  return options.destination ? pino(base, options.destination) : pino(base);
}
