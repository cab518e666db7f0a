import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger } from "pino";

const REDACTED = "[REDACTED]";
// Bot tokens travel inside Bot API URLs (/bot<token>/method), percent-encoded too; catch them even
// when we don't know the token.
const BOT_TOKEN_IN_URL = /bot\d{3,}(?::|%3a)[a-z0-9_-]{20,}/gi;
// Characters that show nothing: a secret with one of them inside still reads as the secret.
const INVISIBLE = "[\\u00ad\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\ufeff]*";

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The ways a secret is written out: as it is, percent-encoded (a URL), HTML-escaped (a message). */
function writtenForms(secret: string): string[] {
  const html = secret.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  return [...new Set([secret, encodeURIComponent(secret), html])];
}

/**
 * A pattern for one written form that also matches it split by invisible characters. A percent
 * escape is one unit, its hex digits in either case, as encoders differ.
 */
function splitPattern(form: string): string {
  const units = form.match(/%[0-9A-F]{2}|[\s\S]/gu) ?? [];
  return units
    .map((unit) =>
      unit.length === 3 && unit.startsWith("%")
        ? `%${[...unit.slice(1)].map((d) => (/\d/.test(d) ? d : `[${d}${d.toLowerCase()}]`)).join("")}`
        : escapeRegExp(unit),
    )
    .join(INVISIBLE);
}

/**
 * One scrubber for everything that leaves the process or is kept: log lines, messages to users,
 * errors stored in the database. Each secret is caught as it is, percent-encoded, HTML-escaped,
 * and split by zero-width characters.
 */
export function createScrubber(secrets: readonly (string | undefined)[]): (text: string) => string {
  const known = secrets.filter((s): s is string => typeof s === "string" && s.length >= 4);
  const forms = [...new Set(known.flatMap(writtenForms))].sort((a, b) => b.length - a.length);
  const pattern =
    forms.length === 0 ? undefined : new RegExp(forms.map(splitPattern).join("|"), "g");
  return (text) => {
    const out = text.replace(BOT_TOKEN_IN_URL, `bot${REDACTED}`);
    return pattern === undefined ? out : out.replace(pattern, REDACTED);
  };
}

/** An error's fields that say why it happened: Node's system errors, pg's, grammY's, HTTP's. */
const REASON_FIELDS = [
  "code",
  "errno",
  "syscall",
  "address",
  "port",
  "hostname",
  "status",
  "error_code",
  "description",
  "severity",
  "routine",
] as const;

function scrubValue(value: unknown, scrub: (s: string) => string, depth: number): unknown {
  if (typeof value === "string") return scrub(value);
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    // What says why: a system error's code (ECONNREFUSED), PostgreSQL's SQLSTATE, and what caused
    // it (fetch's "fetch failed" holds the socket's error there). Named fields only: others may
    // hold what users wrote (pg's `detail` quotes a failing row) or a whole response.
    const fields: Record<string, unknown> = {};
    for (const k of REASON_FIELDS) {
      const v = (value as unknown as Record<string, unknown>)[k];
      if (typeof v === "string" || typeof v === "number")
        fields[k] = scrubValue(v, scrub, depth + 1);
    }
    const { cause } = value;
    const errors = value instanceof AggregateError ? value.errors : undefined;
    return {
      type: value.name,
      message: scrub(value.message),
      ...fields,
      ...(cause === undefined ? {} : { cause: scrubValue(cause, scrub, depth + 1) }),
      ...(errors ? { errors: scrubValue(errors, scrub, depth + 1) } : {}),
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
