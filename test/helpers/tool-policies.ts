import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The environment of a service whose tests are about something else than asking: an MCP_CONFIG
 * file that sets write_file and run_command (asked for by default) to allow.
 */
export function allowBuiltinTools(): { MCP_CONFIG: string } {
  return { MCP_CONFIG: mcpConfigFile({ policies: { write_file: "allow", run_command: "allow" } }) };
}

/** Writes an MCP_CONFIG file for a test and returns its path. */
export function mcpConfigFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "koroku-mcp-")), "mcp.json");
  writeFileSync(path, JSON.stringify(content));
  return path;
}
