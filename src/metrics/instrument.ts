import { GeminiError } from "../agent/gemini-errors.js";
import type { AgentHooks } from "../agent/hooks.js";
import type { ModelClient } from "../agent/model-client.js";
import type { Agent } from "../agent/turn.js";
import { NAME_SEPARATOR } from "../mcp/tool-names.js";
import { LeaseLostError } from "../queue/inbox.js";
import type { Metrics, TurnOutcome } from "./metrics.js";

const seconds = (since: number) => (performance.now() - since) / 1000;

/** Times every Gemini call (turns' and summaries') and counts its tokens by model. */
export function instrumentModel(model: ModelClient, metrics: Metrics): ModelClient {
  return {
    ...model,
    async generate(request) {
      const started = performance.now();
      try {
        const result = await model.generate(request);
        metrics.modelCall(request.model, true, seconds(started), result.usage);
        return result;
      } catch (error) {
        metrics.modelCall(request.model, false, seconds(started));
        throw error;
      }
    },
  };
}

function outcomeOf(error: unknown): TurnOutcome {
  if (error instanceof GeminiError) return "gemini_error";
  if (error instanceof LeaseLostError) return "lease_lost";
  return "error";
}

/** Counts and times turns by how they ended. */
export function instrumentAgent(agent: Agent, metrics: Metrics): Agent {
  return {
    ...agent,
    async runTurn(chatId, input) {
      const started = performance.now();
      try {
        const result = await agent.runTurn(chatId, input);
        metrics.turnEnded("answered", seconds(started));
        return result;
      } catch (error) {
        metrics.turnEnded(outcomeOf(error), seconds(started));
        throw error;
      }
    },
  };
}

/**
 * Tool calls, compactions and first visible text, from the agent's hooks. A tool name the model
 * made up is counted as "unknown", so that it cannot grow the series without bound.
 */
export function observeHooks(hooks: AgentHooks, metrics: Metrics, tools: readonly string[]): void {
  const known = new Set(tools);
  // MCP tools come and go with their servers: one label for them all keeps the series bounded.
  const label = (name: string) =>
    known.has(name) ? name : name.includes(NAME_SEPARATOR) ? "mcp" : "unknown";
  hooks.on("toolResult", (e) => metrics.toolCall(label(e.name), e.ok));
  hooks.on("compaction", () => metrics.compaction());
  hooks.on("firstVisibleText", (e) => metrics.firstVisibleText(e.seconds));
}
