import type { ServerStatus } from "../mcp/server-connection.js";
import { truncate } from "../session/event-text.js";
import type { PolicyOf } from "./policy.js";
import type { Grant } from "./store.js";

/** How a place marks words up: Telegram's HTML (which escapes them too), a terminal's styles. */
export type Markup = {
  bold(text: string): string;
  code(text: string): string;
  text(text: string): string;
};

const STATE_ICONS: Record<ServerStatus["state"], string> = {
  ready: "🟢",
  starting: "🟡",
  unavailable: "🔴",
  stopped: "⚪",
};

/** The MCP servers, their state, and their tools with each one's policy (and those left out). */
export function serversReport(
  servers: readonly ServerStatus[],
  policyOf: PolicyOf,
  m: Markup,
): string {
  if (servers.length === 0) return m.text("No MCP servers are set up (MCP_CONFIG names none).");
  const lines = [m.bold("MCP servers")];
  for (const server of servers) {
    const why = server.error ? `: ${m.text(truncate(server.error, 200))}` : "";
    lines.push(`${STATE_ICONS[server.state]} ${m.bold(server.name)} (${server.state}${why})`);
    for (const tool of server.tools) {
      lines.push(`    • ${m.code(tool.remoteName)} — ${policyOf(tool.name)}`);
    }
    for (const left of server.skipped) {
      lines.push(`    ✗ ${m.code(left.tool)} left out: ${m.text(left.why)}`);
    }
  }
  return lines.join("\n");
}

/** The "always allow" grants of a scope. */
export function grantsReport(grants: readonly Grant[], m: Markup): string {
  if (grants.length === 0) {
    return m.text(
      "No tool is always allowed here: each call of a tool that asks waits for your yes.",
    );
  }
  return [m.bold("Always allowed here"), ...grants.map((g) => `• ${m.code(g.tool)}`)].join("\n");
}
