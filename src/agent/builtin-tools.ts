import {
  FunctionCallingConfigMode,
  type FunctionDeclaration,
  type GenerateContentConfig,
  type Tool,
  type ToolConfig,
} from "@google/genai";
import type { BuiltinTool } from "../config.js";

const TOOL_FIELDS: Record<BuiltinTool, (tool: Tool) => void> = {
  google_search: (tool) => {
    tool.googleSearch = {};
  },
  url_context: (tool) => {
    tool.urlContext = {};
  },
  code_execution: (tool) => {
    tool.codeExecution = {};
  },
};

/**
 * Gemini 3 combines its own tools with function calling in one request (the "tool combination"
 * of the docs); Gemini 2.x and 1.x refuse that, so they get Koroku's functions alone.
 */
const combinesTools = (model: string): boolean =>
  !/^gemini-(1\.|2\.)/.test(model.replace(/^models\//, ""));

/**
 * The request's tools: Koroku's function declarations and Gemini's built-in tools in one Tool,
 * with includeServerSideToolInvocations so the searches and code runs come back as parts (which
 * must then be sent back with the history). `functionCalling: "none"` forbids calling the
 * functions (the built-in tools stay usable: they are not counted in the tool budget).
 */
export function toolsConfig(
  model: string,
  declarations: readonly FunctionDeclaration[] | undefined,
  builtins: readonly BuiltinTool[] | undefined,
  functionCalling?: "none",
): Pick<GenerateContentConfig, "tools" | "toolConfig"> {
  const functions = declarations ?? [];
  const server = combinesTools(model) || functions.length === 0 ? (builtins ?? []) : [];
  if (functions.length === 0 && server.length === 0) return {};
  const tool: Tool = functions.length > 0 ? { functionDeclarations: [...functions] } : {};
  for (const name of server) TOOL_FIELDS[name](tool);
  const toolConfig: ToolConfig = {};
  if (server.length > 0) toolConfig.includeServerSideToolInvocations = true;
  if (functionCalling === "none" && functions.length > 0) {
    toolConfig.functionCallingConfig = { mode: FunctionCallingConfigMode.NONE };
  }
  return Object.keys(toolConfig).length > 0 ? { tools: [tool], toolConfig } : { tools: [tool] };
}
