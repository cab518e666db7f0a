import type { McpConfig, Policy } from "../mcp/config-file.js";
import { NAME_SEPARATOR } from "../mcp/tool-names.js";

/** Koroku's own tools that change things outside the conversation: asked for by default. */
export const ASKING_BUILTINS: ReadonlySet<string> = new Set(["write_file", "run_command"]);

export type PolicyOf = (tool: string) => Policy;

/**
 * Each tool's policy, from MCP_CONFIG's file: its `policies` by full name first, then the
 * server's `tools` and `policy`; by default `ask` for MCP tools, run_command and write_file, and
 * `allow` for the rest. Nothing a tool returns can change it: it is read once, from the file.
 */
export function createPolicies(config: Pick<McpConfig, "servers" | "policies">): PolicyOf {
  const servers = new Map(config.servers.map((server) => [server.name, server]));
  // Own keys only: a tool named `valueOf` or `constructor` must not find Object.prototype's.
  const own = (policies: Readonly<Record<string, Policy>>, name: string): Policy | undefined =>
    Object.hasOwn(policies, name) ? policies[name] : undefined;
  return (tool) => {
    const named = own(config.policies, tool);
    if (named) return named;
    const at = tool.indexOf(NAME_SEPARATOR);
    const server = at < 0 ? undefined : servers.get(tool.slice(0, at));
    if (server)
      return own(server.tools, tool.slice(at + NAME_SEPARATOR.length)) ?? server.policy ?? "ask";
    return ASKING_BUILTINS.has(tool) ? "ask" : "allow";
  };
}
