import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readMcpConfig } from "../../src/mcp/config-file.js";
import { OWN_SECRETS_ENV } from "../helpers/own-secrets.js";

/** `${NAME}`, written so that it is not taken for a template string's placeholder. */
const ref = (name: string) => `$${"{"}${name}}`;

function file(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "mcp-config-")), "mcp.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

describe("readMcpConfig", () => {
  it("reads Claude Desktop's mcpServers, with tokens from the environment", () => {
    const path = file({
      mcpServers: {
        files: {
          command: "npx",
          args: ["-y", "server", ref("ROOT")],
          env: { TOKEN: ref("FILES_TOKEN") },
        },
        calendar: {
          url: "https://mcp.example.com/mcp",
          headers: { Authorization: `Bearer ${ref("CAL_TOKEN")}` },
          policy: "allow",
          tools: { delete_event: "ask" },
          timeoutSeconds: 5,
        },
      },
      policies: { write_file: "allow" },
    });
    const env = { ROOT: "/srv", FILES_TOKEN: "files-token-123", CAL_TOKEN: "calendar-token-456" };
    const { config, problems } = readMcpConfig(path, env);
    expect(problems).toEqual([]);
    expect(config?.servers).toEqual([
      {
        name: "files",
        transport: {
          kind: "stdio",
          command: "npx",
          args: ["-y", "server", "/srv"],
          env: { TOKEN: "files-token-123" },
        },
        tools: {},
        timeoutMs: 60_000,
        maxOutputChars: 32_000,
      },
      {
        name: "calendar",
        transport: {
          kind: "http",
          url: "https://mcp.example.com/mcp",
          headers: { Authorization: "Bearer calendar-token-456" },
        },
        policy: "allow",
        tools: { delete_event: "ask" },
        timeoutMs: 5_000,
        maxOutputChars: 32_000,
      },
    ]);
    expect(config?.policies).toEqual({ write_file: "allow" });
    expect(config?.secrets).toEqual(["files-token-123", "calendar-token-456"]);
  });

  it("says each problem in one line", () => {
    const path = file({
      mcpServers: {
        "bad name": { command: "x" },
        neither: { args: [] },
        web: { url: "ftp://x", policy: "maybe" },
        shell: { command: "x", env: { T: ref("MISSING_TOKEN") } },
      },
    });
    expect(readMcpConfig(path, {}).problems).toEqual([
      'MCP_CONFIG: server "bad name": a server\'s name starts with a letter, holds letters, digits, "-" and single "_", 30 characters at most (it prefixes its tools\' names)',
      'MCP_CONFIG: server "neither" needs "command" (a stdio server) or "url" (Streamable HTTP)',
      'MCP_CONFIG: server "web": policy: a policy is "allow", "ask" or "deny"',
      `MCP_CONFIG: server "shell" env "T" uses ${ref("MISSING_TOKEN")}, which is not set in the environment`,
    ]);
  });

  it("gives no server Koroku's own secrets, by name or by value", () => {
    const env = {
      ...OWN_SECRETS_ENV,
      METRICS_TOKEN: "short",
      SAME_KEY: "the-gemini-api-key",
      OWN_KEY: "a-key-of-its-own",
    };
    const path = file({
      mcpServers: {
        named: { command: "x", env: { KEY: ref("GEMINI_API_KEY"), M: ref("METRICS_TOKEN") } },
        copied: { command: "x", args: ["--token=123456:the-bot-token"] },
        aliased: { url: "https://x.example/mcp", headers: { "x-api-key": ref("SAME_KEY") } },
        database: { command: "x", env: { PGPASSWORD: "db/password" } },
        fine: { command: "x", env: { KEY: ref("OWN_KEY"), WHERE: ref("HOME") } },
      },
    });
    const why =
      "Koroku's own secret, which no MCP server is given: give the server a credential of its own";
    expect(readMcpConfig(path, { ...env, HOME: "/home/koroku" }).problems).toEqual([
      `MCP_CONFIG: server "named" env "KEY" uses ${ref("GEMINI_API_KEY")}, ${why}`,
      `MCP_CONFIG: server "named" env "M" uses ${ref("METRICS_TOKEN")}, ${why}`,
      `MCP_CONFIG: server "copied" holds the value of TELEGRAM_BOT_TOKEN, ${why}`,
      `MCP_CONFIG: server "aliased" holds the value of GEMINI_API_KEY, ${why}`,
      `MCP_CONFIG: server "database" holds the value of DATABASE_URL, ${why}`,
    ]);
  });

  it("names a file it cannot read or parse", () => {
    expect(readMcpConfig("/nonexistent/mcp.json", {}).problems).toEqual([
      "MCP_CONFIG: cannot read /nonexistent/mcp.json: no such file",
    ]);
    expect(readMcpConfig(file("{oops"), {}).problems[0]).toMatch(
      /^MCP_CONFIG: cannot read .*: not valid JSON/,
    );
  });
});
