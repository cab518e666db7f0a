import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readMcpConfig } from "../../src/mcp/config-file.js";

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

  it("names a file it cannot read or parse", () => {
    expect(readMcpConfig("/nonexistent/mcp.json", {}).problems).toEqual([
      "MCP_CONFIG: cannot read /nonexistent/mcp.json: no such file",
    ]);
    expect(readMcpConfig(file("{oops"), {}).problems[0]).toMatch(
      /^MCP_CONFIG: cannot read .*: not valid JSON/,
    );
  });
});
