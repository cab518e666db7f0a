import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  configuredSecrets,
  loadConfig,
  parseDatabaseUrl,
  readEnvironment,
} from "../../src/config.js";

const minimal = { TELEGRAM_BOT_TOKEN: "123:abc", GEMINI_API_KEY: "key" };

describe("config", () => {
  it("applies the defaults of DESIGN.md", () => {
    const config = loadConfig(minimal);
    expect(config).toMatchObject({
      allowedUserIds: [],
      geminiModel: "gemini-3.8-flash",
      geminiCompactionModel: "gemini-3.5-flash-lite",
      geminiBaseUrl: undefined,
      telegramApiRoot: "https://api.telegram.org",
      database: { kind: "sqlite", path: "./data/agent.db" },
      webhook: undefined,
      host: "0.0.0.0",
      port: 8080,
      maxToolCallsPerTurn: 15,
      compactionMaxEvents: 30,
      compactionMaxTokens: 200000,
      memoryDir: "./data/memory",
      workspaceDir: "./data/workspace",
      enableShellTool: false,
      richMessages: true,
      logLevel: "info",
      inboxLeaseSeconds: 30,
      inboxRetentionDays: 7,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("parses every variable", () => {
    const config = loadConfig({
      ...minimal,
      ALLOWED_USER_IDS: " 1, 22 ,333",
      GEMINI_MODEL: "m1",
      GEMINI_COMPACTION_MODEL: "m2",
      GEMINI_BASE_URL: "http://127.0.0.1:9/",
      TELEGRAM_API_ROOT: "http://127.0.0.1:8",
      DATABASE_URL: "postgresql://u@h/db",
      WEBHOOK_URL: "https://bot.example.com/telegram/webhook",
      WEBHOOK_SECRET: "s3cret_-",
      PORT: "0",
      MAX_TOOL_CALLS_PER_TURN: "3",
      MAX_CONCURRENT_TURNS: "200",
      COMPACTION_MAX_EVENTS: "0",
      ENABLE_SHELL_TOOL: "yes",
      RICH_MESSAGES: "off",
      LOG_LEVEL: "DEBUG",
      GEMINI_THINKING_LEVEL: " High ",
      INBOX_LEASE_SECONDS: "5",
      INBOX_RETENTION_DAYS: "30",
    });
    expect(config.allowedUserIds).toEqual([1, 22, 333]);
    expect(config.geminiCompactionModel).toBe("m2");
    expect(config.geminiThinkingLevel).toBe("high");
    expect(config.geminiBaseUrl).toBe("http://127.0.0.1:9");
    expect(config.database).toEqual({ kind: "postgres", connectionString: "postgresql://u@h/db" });
    expect(config.port).toBe(0);
    expect(config.compactionMaxEvents).toBe(0);
    expect(config.maxConcurrentTurns).toBe(200);
    expect(config.enableShellTool).toBe(true);
    expect(config.richMessages).toBe(false);
    expect(config.logLevel).toBe("debug");
    expect(config.inboxLeaseSeconds).toBe(5);
    expect(config.inboxRetentionDays).toBe(30);
  });

  it("takes a flag's default when it is left empty, as a copied .env leaves it", () => {
    const config = loadConfig({ ...minimal, RICH_MESSAGES: " ", ENABLE_SHELL_TOOL: "" });
    expect(config.richMessages).toBe(true);
    expect(config.enableShellTool).toBe(false);
    expect(() => loadConfig({ ...minimal, RICH_MESSAGES: "rich" })).toThrow(
      /RICH_MESSAGES must be true or false, got "rich"/,
    );
  });

  it("lists every problem in one message that says what to set", () => {
    let error: unknown;
    try {
      loadConfig({
        ALLOWED_USER_IDS: "12,abc",
        PORT: "http",
        WEBHOOK_URL: "https://x.y/hook",
        ENABLE_SHELL_TOOL: "maybe",
        INBOX_RETENTION_DAYS: "0",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    for (const name of [
      "TELEGRAM_BOT_TOKEN",
      "GEMINI_API_KEY",
      "ALLOWED_USER_IDS",
      "PORT",
      "WEBHOOK_SECRET",
      "ENABLE_SHELL_TOOL",
      "INBOX_RETENTION_DAYS",
    ]) {
      expect(message).toContain(name);
    }
    expect(message).toContain("@BotFather");
    expect((error as ConfigError).problems).toHaveLength(7);
  });

  it("reads APPROVAL_TIMEOUT as a duration", () => {
    expect(loadConfig(minimal).approvalTimeoutMs).toBe(600_000);
    expect(loadConfig({ ...minimal, APPROVAL_TIMEOUT: "90s" }).approvalTimeoutMs).toBe(90_000);
    expect(loadConfig({ ...minimal, APPROVAL_TIMEOUT: "2h" }).approvalTimeoutMs).toBe(7_200_000);
    expect(loadConfig({ ...minimal, APPROVAL_TIMEOUT: "30" }).approvalTimeoutMs).toBe(30_000);
    expect(() => loadConfig({ ...minimal, APPROVAL_TIMEOUT: "soon" })).toThrow(
      /APPROVAL_TIMEOUT must be a duration of at least a second such as 90s, 10m or 1h, got "soon"/,
    );
  });

  it("reads MCP_CONFIG's file, reporting its problems with the others'", () => {
    expect(loadConfig(minimal).mcp).toEqual({ servers: [], policies: {}, secrets: [] });
    expect(() => loadConfig({ ...minimal, MCP_CONFIG: "/nonexistent/mcp.json" })).toThrow(
      /MCP_CONFIG: cannot read \/nonexistent\/mcp.json: no such file/,
    );
  });

  it("leaves the thinking level to the model unless one of the four levels is set", () => {
    expect(loadConfig({ ...minimal, GEMINI_THINKING_LEVEL: "" }).geminiThinkingLevel).toBe(
      undefined,
    );
    expect(() => loadConfig({ ...minimal, GEMINI_THINKING_LEVEL: "max" })).toThrow(
      /GEMINI_THINKING_LEVEL must be one of minimal, low, medium, high/,
    );
  });

  it("speaks only to voice notes by default, and takes auto, always or off", () => {
    const config = loadConfig(minimal);
    expect(config.voiceReplies).toBe("auto");
    expect(config.geminiTtsModel).toBe("gemini-3.8-flash-tts");
    expect(config.geminiVoice).toBe("Kore");
    expect(config.geminiImageModel).toBe("gemini-nano-banana-2.1");
    expect(loadConfig({ ...minimal, VOICE_REPLIES: " Always " }).voiceReplies).toBe("always");
    expect(loadConfig({ ...minimal, VOICE_REPLIES: "off" }).voiceReplies).toBe("off");
    expect(() => loadConfig({ ...minimal, VOICE_REPLIES: "on" })).toThrow(
      /VOICE_REPLIES must be one of auto, always, off/,
    );
  });

  it("protects /metrics only when METRICS_TOKEN is set to something", () => {
    expect(loadConfig(minimal).metricsToken).toBeUndefined();
    expect(loadConfig({ ...minimal, METRICS_TOKEN: "  " }).metricsToken).toBeUndefined();
    expect(loadConfig({ ...minimal, METRICS_TOKEN: " s3cret " }).metricsToken).toBe("s3cret");
  });

  it("offers google_search and url_context unless GEMINI_BUILTIN_TOOLS says otherwise; empty means none", () => {
    expect(loadConfig(minimal).geminiBuiltinTools).toEqual(["google_search", "url_context"]);
    expect(loadConfig({ ...minimal, GEMINI_BUILTIN_TOOLS: "" }).geminiBuiltinTools).toEqual([]);
    expect(
      loadConfig({ ...minimal, GEMINI_BUILTIN_TOOLS: " Code_Execution, google_search,," })
        .geminiBuiltinTools,
    ).toEqual(["code_execution", "google_search"]);
    expect(() => loadConfig({ ...minimal, GEMINI_BUILTIN_TOOLS: "google_maps" })).toThrow(
      /GEMINI_BUILTIN_TOOLS takes a comma-separated list of google_search, url_context, code_execution .*"google_maps"/,
    );
  });

  it("does not need a bot token for the terminal chat", () => {
    expect(
      loadConfig({ GEMINI_API_KEY: "k" }, { requireTelegram: false }).telegramBotToken,
    ).toBeUndefined();
  });

  it("reads .env under the real environment", () => {
    const dir = mkdtempSync(join(tmpdir(), "koroku-env-"));
    const file = join(dir, ".env");
    writeFileSync(file, "GEMINI_API_KEY=from-file\nGEMINI_MODEL=file-model\n# comment\n");
    const env = readEnvironment({ GEMINI_MODEL: "env-model" }, file);
    expect(env.GEMINI_API_KEY).toBe("from-file");
    expect(env.GEMINI_MODEL).toBe("env-model");
    expect(readEnvironment({ A: "1" }, join(dir, "missing")).A).toBe("1");
  });

  it("understands sqlite URLs and bare paths", () => {
    expect(parseDatabaseUrl("sqlite:/data/agent.db")).toEqual({
      kind: "sqlite",
      path: "/data/agent.db",
    });
    expect(parseDatabaseUrl("sqlite://./x.db")).toEqual({ kind: "sqlite", path: "./x.db" });
    expect(parseDatabaseUrl("./plain.db")).toEqual({ kind: "sqlite", path: "./plain.db" });
    expect(parseDatabaseUrl("postgres://a@b/c").kind).toBe("postgres");
    expect(parseDatabaseUrl("C:\\data\\agent.db")).toEqual({
      kind: "sqlite",
      path: "C:\\data\\agent.db",
    });
  });

  it.each([
    "mysql://bot:hunter2@db/koroku",
    "postgress://bot:hunter2@db/koroku",
    "postgres:/bot:hunter2@db/koroku",
  ])("refuses DATABASE_URL %s, naming only its scheme", (url) => {
    const problems = () => loadConfig({ ...minimal, DATABASE_URL: url });
    expect(problems).toThrow(ConfigError);
    expect(problems).toThrow(/DATABASE_URL must be sqlite:<path>, a file path, or a postgres:\/\//);
    expect(problems).not.toThrow(/hunter2/);
  });

  it.each(["GEMINI_BASE_URL", "TELEGRAM_API_ROOT"])(
    "refuses a user and password in %s in one line, without echoing the password",
    (name) => {
      const error = (() => {
        try {
          loadConfig({ ...minimal, [name]: "https://koroku:hunter2@proxy.example/" });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([
        `${name} must not hold a user name or password ("https://***@proxy.example/"): Koroku names this address in logs and error messages; remove the "user:password@" part`,
      ]);
      expect((error as Error).message).not.toMatch(/hunter2|koroku:/);
      // A user name alone is refused too: it is often a token.
      expect(() => loadConfig({ ...minimal, [name]: "https://hunter2@proxy.example/" })).toThrow(
        /must not hold a user name or password \("https:\/\/\*\*\*@proxy.example\/"\)/,
      );
    },
  );

  it("quotes a URL it cannot take without the password in it", () => {
    const problems = () =>
      loadConfig({ ...minimal, GEMINI_BASE_URL: "ftp://koroku:hunter2@proxy.example/" });
    expect(problems).toThrow(
      /GEMINI_BASE_URL must be a http: or https: URL, got "ftp:\/\/\*\*\*@proxy.example\/"/,
    );
    expect(problems).not.toThrow(/hunter2/);
  });

  it("refuses an http: WEBHOOK_URL, which Telegram would refuse", () => {
    expect(() =>
      loadConfig({ ...minimal, WEBHOOK_URL: "http://bot.example.com/hook", WEBHOOK_SECRET: "s" }),
    ).toThrow(/WEBHOOK_URL must be a https: URL/);
  });

  it("takes the default for optional settings left empty", () => {
    const config = loadConfig({
      ...minimal,
      GEMINI_MODEL: " ",
      GEMINI_COMPACTION_MODEL: "",
      DATABASE_URL: "",
      HOST: "",
      MEMORY_DIR: "",
      WORKSPACE_DIR: "",
      PORT: "",
      COMPACTION_MAX_EVENTS: " ",
      MAX_TOOL_CALLS_PER_TURN: "",
      MAX_CONCURRENT_TURNS: "",
      LOG_LEVEL: "",
    });
    expect(config).toMatchObject({
      geminiModel: "gemini-3.8-flash",
      geminiCompactionModel: "gemini-3.5-flash-lite",
      database: { kind: "sqlite", path: "./data/agent.db" },
      host: "0.0.0.0",
      memoryDir: "./data/memory",
      workspaceDir: "./data/workspace",
      port: 8080,
      compactionMaxEvents: 30,
      maxToolCallsPerTurn: 15,
      maxConcurrentTurns: 1_000,
      logLevel: "info",
    });
  });
});

describe("configured secrets", () => {
  it("are the token, the API key, the webhook secret and the database password as typed", () => {
    const config = loadConfig({
      ...minimal,
      WEBHOOK_URL: "https://example.com/hook",
      WEBHOOK_SECRET: "hook-secret",
      DATABASE_URL: "postgres://bot:p%40ss%2Fword@db/koroku",
    });
    expect(configuredSecrets(config)).toEqual([
      "123:abc",
      "key",
      "hook-secret",
      "p@ss/word",
      "p%40ss%2Fword",
    ]);
    expect(configuredSecrets(loadConfig(minimal))).toEqual(["123:abc", "key"]);
  });

  it("reads a PostgreSQL URL's password as pg does, and refuses in one line what pg cannot read", () => {
    const secretsOf = (url: string) =>
      configuredSecrets(loadConfig({ ...minimal, DATABASE_URL: url })).slice(2);
    // pg takes a stray "%" as it is, a password from the query, and a socket folder as the host.
    expect(secretsOf("postgres://koroku:50%off@127.0.0.1:5432/test")).toContain("50%off");
    expect(secretsOf("postgres://koroku@db:5432/koroku?password=hunter2")).toEqual(["hunter2"]);
    expect(secretsOf("postgres://koroku:s3cret@/test?host=/var/run/postgresql")).toContain(
      "s3cret",
    );
    const refused = () => loadConfig({ ...minimal, DATABASE_URL: "postgres://u:pa#ss@db/koroku" });
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/percent-encode the password's # \/ \? @ and %/);
    expect(refused).not.toThrow(/pa#ss/);
  });
});
