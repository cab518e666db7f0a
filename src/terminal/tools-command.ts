import type { App } from "../app.js";
import { grantsReport, type Markup, serversReport } from "../approvals/tools-report.js";
import { scopeName } from "../scope/recall-scope.js";
import type { Styles } from "./markdown.js";

const TERMINAL_SCOPE = scopeName({ kind: "terminal" });

export const TOOLS_USAGE = "Usage: tools, or tools revoke <tool> to be asked about it again.";

/**
 * `tools`: the MCP servers and their tools as /tools shows them in Telegram, and what is always
 * allowed in the terminal; `tools revoke <tool>` takes an "always" back. What to print.
 */
export async function toolsCommand(
  app: Pick<App, "mcp" | "approvals">,
  arg: string,
  styles: Styles,
): Promise<string> {
  const { store, policyOf } = app.approvals;
  const grants = await store.grants(TERMINAL_SCOPE);
  if (arg === "") {
    const markup: Markup = { bold: styles.bold, code: styles.code, text: (text) => text };
    const hint = grants.length > 0 ? `\n${styles.code("tools revoke <tool>")} asks again.` : "";
    return [
      serversReport((await app.mcp?.servers()) ?? [], policyOf, markup),
      grantsReport(grants, markup) + hint,
    ].join("\n\n");
  }
  const tool = /^revoke\s+(\S+)$/.exec(arg)?.[1];
  if (tool === undefined) return TOOLS_USAGE;
  const grant = grants.find((g) => g.tool === tool);
  if (!grant || !(await store.revoke(TERMINAL_SCOPE, grant.id))) {
    return `${tool} is not always allowed here.`;
  }
  return `Revoked: ${tool} asks again from now on.`;
}
