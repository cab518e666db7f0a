import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { parse as parsePostgresUrl } from "pg-connection-string";
import { z } from "zod";
import { type McpConfig, readMcpConfig } from "./mcp/config-file.js";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export const THINKING_LEVELS = ["minimal", "low", "medium", "high"] as const;
/** How answers show while they are written (docs/streaming.md). */
export const STREAMING_MODES = ["auto", "draft", "edit", "off"] as const;
export type StreamingMode = (typeof STREAMING_MODES)[number];
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];
/** When answers are spoken as voice notes (docs/voice-and-images.md); `/voice` overrides it. */
export const VOICE_REPLY_MODES = ["auto", "always", "off"] as const;
export type VoiceReplyMode = (typeof VOICE_REPLY_MODES)[number];
export const BUILTIN_TOOLS = ["google_search", "url_context", "code_execution"] as const;
export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];
const DEFAULT_BUILTIN_TOOLS = "google_search,url_context";
/** docs/models.md says why these two. */
export const DEFAULT_MODEL = "gemini-3.8-flash";
export const DEFAULT_COMPACTION_MODEL = "gemini-3.5-flash-lite";
/** Gemini's current embedding model (ai.google.dev/gemini-api/docs/models/gemini-embedding-001). */
export const DEFAULT_EMBEDDING_MODEL = "gemini-embedding-001";

/** Unset ⇒ the default; set but empty ⇒ none (unlike other settings, where empty means default). */
const builtinTools = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const names = (value ?? DEFAULT_BUILTIN_TOOLS)
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== "");
    const unknown = names.filter((name) => !(BUILTIN_TOOLS as readonly string[]).includes(name));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `GEMINI_BUILTIN_TOOLS takes a comma-separated list of ${BUILTIN_TOOLS.join(", ")} (or nothing for none), not ${unknown.map((n) => `"${n}"`).join(", ")}`,
      });
      return z.NEVER;
    }
    return Object.freeze([...new Set(names)] as BuiltinTool[]);
  });
/** Turns one process runs at once unless MAX_CONCURRENT_TURNS says otherwise. */
export const DEFAULT_MAX_CONCURRENT_TURNS = 1_000;
const DEFAULT_SQLITE_PATH = "./data/agent.db";
const DEFAULT_DATABASE_URL = `sqlite:${DEFAULT_SQLITE_PATH}`;

/** Environment flags accept the spellings operators actually type; left empty, the default. */
const flag = (name: string, fallback = false) =>
  z
    .string()
    .default("")
    .transform((value, ctx) => {
      const v = value.trim().toLowerCase();
      if (v === "") return fallback;
      if (["1", "true", "yes", "on"].includes(v)) return true;
      if (["0", "false", "no", "off"].includes(v)) return false;
      ctx.addIssue({ code: "custom", message: `${name} must be true or false, got "${value}"` });
      return z.NEVER;
    });

const count = (name: string, fallback: number, min: number) =>
  z
    .string()
    .default("")
    .transform((value, ctx) => {
      // Number("") is 0, which would quietly turn PORT= into a random port and compaction off.
      const n = value.trim() === "" ? fallback : Number(value.trim());
      if (!Number.isInteger(n) || n < min) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must be a whole number ≥ ${min}, got "${value}"`,
        });
        return z.NEVER;
      }
      return n;
    });

/** A URL as typed, with any "user:password@" shown as "***@": an error quotes it. */
const maskUserinfo = (value: string): string => value.replace(/\/\/[^/?#]*@/, "//***@");

/**
 * An http(s) address. `refuseCredentials`: the address is named in logs and error messages (a
 * Gemini or Telegram call that fails), where a password in it would be printed.
 */
const optionalUrl = (
  name: string,
  protocols: readonly string[],
  options: { refuseCredentials?: boolean } = {},
) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return undefined;
      let url: URL;
      try {
        url = new URL(value.trim());
        if (!protocols.includes(url.protocol)) throw new Error("protocol");
      } catch {
        ctx.addIssue({
          code: "custom",
          message: `${name} must be a ${protocols.join(" or ")} URL, got "${maskUserinfo(value)}"`,
        });
        return z.NEVER;
      }
      if (options.refuseCredentials && (url.username !== "" || url.password !== "")) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must not hold a user name or password ("${maskUserinfo(url.href)}"): Koroku names this address in logs and error messages; remove the "user:password@" part`,
        });
        return z.NEVER;
      }
      return url.toString().replace(/\/$/, "");
    });

const userIds = z
  .string()
  .default("")
  .transform((value, ctx) => {
    const ids: number[] = [];
    for (const raw of value.split(",")) {
      const item = raw.trim();
      if (item === "") continue;
      // Negative ids are groups and channels: their anonymous administrators, posts as a channel.
      if (!/^-?\d{1,16}$/.test(item)) {
        ctx.addIssue({
          code: "custom",
          message: `ALLOWED_USER_IDS must be comma-separated numeric Telegram ids (users; groups and channels are negative), "${item}" is not one`,
        });
        return z.NEVER;
      }
      ids.push(Number(item));
    }
    return ids;
  });

/** An optional setting; left empty (as a copied .env may leave it) it takes its default. */
const text = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((value) => value?.trim() || fallback);

const DURATION_UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** `90s`, `10m`, `1h`, or a bare number of seconds. */
const duration = (name: string, fallback: string) =>
  text(fallback).transform((value, ctx) => {
    const match = /^(\d+(?:\.\d+)?)\s*([smh]?)$/i.exec(value);
    const ms = match
      ? Number(match[1]) * (DURATION_UNITS[(match[2] || "s").toLowerCase()] ?? 0)
      : 0;
    if (!match || ms < 1_000) {
      ctx.addIssue({
        code: "custom",
        message: `${name} must be a duration of at least a second such as 90s, 10m or 1h, got "${value}"`,
      });
      return z.NEVER;
    }
    return ms;
  });

/** A TIME_ZONE typo must stop start-up, not fail every scheduled task later. */
function isKnownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const nonEmpty = (name: string, hint: string) =>
  z
    .string({ error: `${name} is not set: ${hint}` })
    .trim()
    .min(1, { error: `${name} is empty: ${hint}` });

const envSchema = (requireTelegram: boolean) =>
  z.object({
    TELEGRAM_BOT_TOKEN: requireTelegram
      ? nonEmpty(
          "TELEGRAM_BOT_TOKEN",
          "create a bot with @BotFather and set the token it gives you",
        )
      : z.string().optional(),
    GEMINI_API_KEY: nonEmpty(
      "GEMINI_API_KEY",
      "create a key at https://aistudio.google.com/apikey and set it",
    ),
    ALLOWED_USER_IDS: userIds,
    GEMINI_MODEL: text(DEFAULT_MODEL),
    // Summaries and transcripts read much and write little: Flash-Lite does them for less.
    GEMINI_COMPACTION_MODEL: text(DEFAULT_COMPACTION_MODEL),
    GEMINI_TTS_MODEL: text("gemini-3.8-flash-tts"),
    GEMINI_VOICE: text("Kore"),
    GEMINI_IMAGE_MODEL: text("gemini-nano-banana-2.1"),
    VOICE_REPLIES: text("auto")
      .transform((mode) => mode.toLowerCase())
      .pipe(
        z.enum(VOICE_REPLY_MODES, {
          error: `VOICE_REPLIES must be one of ${VOICE_REPLY_MODES.join(", ")}`,
        }),
      ),
    GEMINI_BUILTIN_TOOLS: builtinTools,
    // Unset: the default; set but empty: recall by meaning is off.
    GEMINI_EMBEDDING_MODEL: z
      .string()
      .optional()
      .transform((value) => (value === undefined ? DEFAULT_EMBEDDING_MODEL : value.trim())),
    GEMINI_THINKING_LEVEL: z
      .string()
      .optional()
      .transform((value) => value?.trim().toLowerCase() || undefined)
      .pipe(
        z
          .enum(THINKING_LEVELS, {
            error: `GEMINI_THINKING_LEVEL must be one of ${THINKING_LEVELS.join(", ")} (or empty for the model's default)`,
          })
          .optional(),
      ),
    GEMINI_BASE_URL: optionalUrl("GEMINI_BASE_URL", ["http:", "https:"], {
      refuseCredentials: true,
    }),
    TELEGRAM_API_ROOT: optionalUrl("TELEGRAM_API_ROOT", ["http:", "https:"], {
      refuseCredentials: true,
    }),
    DATABASE_URL: text(DEFAULT_DATABASE_URL).transform((url, ctx) => {
      try {
        return parseDatabaseUrl(url);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
    // Telegram calls webhooks over HTTPS only; an http: URL would fail at setWebhook.
    WEBHOOK_URL: optionalUrl("WEBHOOK_URL", ["https:"]),
    WEBHOOK_SECRET: z.string().optional(),
    HOST: text("0.0.0.0"),
    PORT: count("PORT", 8080, 0).refine((n) => n <= 65535, {
      error: "PORT must be at most 65535",
    }),
    MAX_TOOL_CALLS_PER_TURN: count("MAX_TOOL_CALLS_PER_TURN", 15, 1),
    // A turn spends nearly all its time waiting on Gemini, so the bound is what waits, not the
    // CPU: 64 streaming turns at once kept 50 chats from queueing behind a whole answer.
    MAX_CONCURRENT_TURNS: count("MAX_CONCURRENT_TURNS", DEFAULT_MAX_CONCURRENT_TURNS, 1),
    COMPACTION_MAX_EVENTS: count("COMPACTION_MAX_EVENTS", 30, 0),
    COMPACTION_MAX_TOKENS: count("COMPACTION_MAX_TOKENS", 200_000, 0),
    MEMORY_DIR: text("./data/memory"),
    WORKSPACE_DIR: text("./data/workspace"),
    MEDIA_MAX_BYTES: count("MEDIA_MAX_BYTES", 20 * 1024 * 1024, 1),
    ENABLE_SHELL_TOOL: flag("ENABLE_SHELL_TOOL"),
    MCP_CONFIG: z
      .string()
      .optional()
      .transform((value) => value?.trim() || undefined),
    APPROVAL_TIMEOUT: duration("APPROVAL_TIMEOUT", "10m"),
    METRICS_TOKEN: z
      .string()
      .optional()
      .transform((value) => value?.trim() || undefined),
    STREAMING: text("auto")
      .transform((mode) => mode.toLowerCase())
      .pipe(
        z.enum(STREAMING_MODES, {
          error: `STREAMING must be one of ${STREAMING_MODES.join(", ")}`,
        }),
      ),
    RICH_MESSAGES: flag("RICH_MESSAGES", true),
    INBOX_LEASE_SECONDS: count("INBOX_LEASE_SECONDS", 30, 1),
    INBOX_RETENTION_DAYS: count("INBOX_RETENTION_DAYS", 7, 1),
    TIME_ZONE: text(Intl.DateTimeFormat().resolvedOptions().timeZone).refine(isKnownTimeZone, {
      error: "TIME_ZONE must be an IANA time zone such as Europe/Berlin or America/New_York",
    }),
    LOG_LEVEL: text("info")
      .transform((level) => level.toLowerCase())
      .pipe(z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}` })),
  });

/** Every environment variable Koroku reads; docs/configuration.md must describe each one. */
export const configVariableNames = (): string[] => Object.keys(envSchema(false).shape);

/** The environment's variables, checked and turned into the settings the code reads. */
const configSchema = (requireTelegram: boolean, env: Record<string, string | undefined>) =>
  envSchema(requireTelegram).transform((e, ctx) => ({
    telegramBotToken: e.TELEGRAM_BOT_TOKEN?.trim() || undefined,
    geminiApiKey: e.GEMINI_API_KEY,
    allowedUserIds: Object.freeze([...e.ALLOWED_USER_IDS]),
    geminiModel: e.GEMINI_MODEL,
    /** Summaries and voice transcripts. */
    geminiCompactionModel: e.GEMINI_COMPACTION_MODEL,
    /** Speaks voice replies; GEMINI_VOICE is checked against Gemini's voice list at start. */
    geminiTtsModel: e.GEMINI_TTS_MODEL,
    geminiVoice: e.GEMINI_VOICE,
    /** Draws and edits pictures (generate_image). */
    geminiImageModel: e.GEMINI_IMAGE_MODEL,
    /** Whether answers are spoken: to voice notes only (auto), always, or never; /voice overrides. */
    voiceReplies: e.VOICE_REPLIES,
    /** Unset ⇒ the model's own default. */
    geminiThinkingLevel: e.GEMINI_THINKING_LEVEL,
    /** Gemini's server-side tools offered beside Koroku's own functions. */
    geminiBuiltinTools: e.GEMINI_BUILTIN_TOOLS,
    /** Recall by meaning; undefined: off. */
    geminiEmbeddingModel: e.GEMINI_EMBEDDING_MODEL || undefined,
    geminiBaseUrl: e.GEMINI_BASE_URL,
    telegramApiRoot: e.TELEGRAM_API_ROOT ?? "https://api.telegram.org",
    database: e.DATABASE_URL,
    /** Set ⇒ webhook mode: Telegram calls `url` with `secret`; unset ⇒ long polling. */
    // crossFieldProblems made sure a URL comes with its secret.
    webhook: e.WEBHOOK_URL
      ? { url: e.WEBHOOK_URL, secret: (e.WEBHOOK_SECRET ?? "").trim() }
      : undefined,
    host: e.HOST,
    port: e.PORT,
    maxToolCallsPerTurn: e.MAX_TOOL_CALLS_PER_TURN,
    maxConcurrentTurns: e.MAX_CONCURRENT_TURNS,
    compactionMaxEvents: e.COMPACTION_MAX_EVENTS,
    compactionMaxTokens: e.COMPACTION_MAX_TOKENS,
    memoryDir: e.MEMORY_DIR,
    workspaceDir: e.WORKSPACE_DIR,
    /** Largest file taken from a user (Telegram's cloud Bot API lets bots fetch 20 MB). */
    mediaMaxBytes: e.MEDIA_MAX_BYTES,
    enableShellTool: e.ENABLE_SHELL_TOOL,
    /** MCP servers and tool policies (MCP_CONFIG's file); unset: no servers, default policies. */
    mcp: mcpConfigOf(e.MCP_CONFIG, env, (message) => ctx.addIssue({ code: "custom", message })),
    /** How long a tool call waits for the user's Allow or Deny. */
    approvalTimeoutMs: e.APPROVAL_TIMEOUT,
    /** Answers go out as rich messages (sendRichMessage), falling back to HTML; false: HTML only. */
    richMessages: e.RICH_MESSAGES,
    logLevel: e.LOG_LEVEL,
    /** Set ⇒ GET /metrics requires `Authorization: Bearer <token>`. */
    metricsToken: e.METRICS_TOKEN,
    streaming: e.STREAMING,
    /** How long a replica owns a running update before another may take it over (PostgreSQL). */
    inboxLeaseSeconds: e.INBOX_LEASE_SECONDS,
    /** Finished inbox rows older than this are deleted; a redelivered update_id is deduplicated until then. */
    inboxRetentionDays: e.INBOX_RETENTION_DAYS,
    /** IANA zone of the system instruction, the clock tool and scheduled tasks. */
    timeZone: e.TIME_ZONE,
  }));

const NO_MCP: McpConfig = Object.freeze({ servers: [], policies: {}, secrets: [] });

/** The file MCP_CONFIG names, read and checked; each of its problems is one problem of the config. */
function mcpConfigOf(
  path: string | undefined,
  env: Record<string, string | undefined>,
  problem: (message: string) => void,
): McpConfig {
  if (path === undefined) return NO_MCP;
  const read = readMcpConfig(path, env);
  for (const message of read.problems) problem(message);
  return read.config ?? NO_MCP;
}

/** Rules that tie two variables together; checked on the raw values so they are reported even when other variables are invalid. */
function crossFieldProblems(env: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const secret = env.WEBHOOK_SECRET?.trim();
  if (env.WEBHOOK_URL?.trim() && !secret) {
    problems.push(
      "WEBHOOK_SECRET is required when WEBHOOK_URL is set: choose 1-256 characters of A-Z, a-z, 0-9, _ and -",
    );
  }
  if (secret && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
    problems.push(
      "WEBHOOK_SECRET may only hold 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)",
    );
  }
  return problems;
}

export type DatabaseTarget =
  | { kind: "sqlite"; path: string }
  | { kind: "postgres"; connectionString: string };

/** The validated configuration, typed by what the schema's transform returns. */
export type Config = Readonly<z.output<ReturnType<typeof configSchema>>>;

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(
      `Koroku cannot start: the configuration has ${problems.length} problem${problems.length === 1 ? "" : "s"}:\n${problems
        .map((p) => `  - ${p}`)
        .join("\n")}\nSet these in the environment or in a .env file (see .env.example).`,
    );
    this.name = "ConfigError";
  }
}

/**
 * `sqlite:<path>`, a bare path, or a `postgres://` / `postgresql://` URL. Any other scheme is a
 * typo (`postgress://`, `postgres:/host`) or a database we do not support; taken as a file path it
 * would start the bot on a new, empty SQLite database. Only the scheme is quoted back: the rest
 * of a URL may hold a password.
 */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    // Read as pg reads it, so that what pg would refuse stops here with a line, not a stack.
    try {
      parsePostgresUrl(url);
    } catch {
      throw new Error(
        "DATABASE_URL is not a PostgreSQL URL pg can read: percent-encode the password's # / ? @ and % (as %23 %2F %3F %40 %25)",
      );
    }
    return { kind: "postgres", connectionString: url };
  }
  const sqlite = /^sqlite:(\/\/)?/i.exec(url);
  // Two letters or more: C:\data\agent.db is a Windows path, not a scheme.
  const scheme = sqlite ? undefined : /^[a-z][a-z0-9+.-]+:/i.exec(url);
  if (scheme) {
    throw new Error(
      `DATABASE_URL must be sqlite:<path>, a file path, or a postgres:// (or postgresql://) URL; "${scheme[0]}" is none of these`,
    );
  }
  const path = sqlite ? url.slice(sqlite[0].length) : url;
  return { kind: "sqlite", path: path === "" ? DEFAULT_SQLITE_PATH : path };
}

/** Reads `.env` (when present) under the real environment, which wins, as dotenv does. */
export function readEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  envFile = ".env",
): Record<string, string | undefined> {
  if (!existsSync(envFile)) return { ...env };
  return { ...parseEnv(readFileSync(envFile, "utf8")), ...env };
}

export function loadConfig(
  env: Record<string, string | undefined>,
  options: { requireTelegram: boolean } = { requireTelegram: true },
): Config {
  const parsed = configSchema(options.requireTelegram, env).safeParse(env);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const name = issue.path.join(".");
        return issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`;
      });
  problems.push(...crossFieldProblems(env));
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(parsed.data);
}

/**
 * Every secret the configuration holds, for the scrubbers of logs and of what users are sent:
 * nothing outside the process may ever show one of these.
 */
export function configuredSecrets(config: Config): string[] {
  const secrets = [
    config.telegramBotToken,
    config.geminiApiKey,
    config.webhook?.secret,
    config.metricsToken,
    ...config.mcp.secrets,
  ];
  if (config.database.kind === "postgres") {
    const url = config.database.connectionString;
    // As pg reads it (from the user:password part or a ?password= parameter), and as written in
    // the URL, where it may be percent-encoded.
    secrets.push(parsePostgresUrl(url).password ?? "");
    if (URL.canParse(url)) secrets.push(new URL(url).password);
  }
  return secrets.filter((s): s is string => s !== undefined && s !== "");
}
