import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createGeminiClient } from "../../src/agent/gemini-client.js";
import { AgentHooks } from "../../src/agent/hooks.js";
import { createGenerateImageTool } from "../../src/images/generate-image.js";
import { createToolRegistry } from "../../src/tools/registry.js";
import { refusingPort } from "../helpers/refusing-port.js";
import { toolContext } from "../helpers/tool-context.js";

describe("generate_image when Gemini cannot be reached", () => {
  it("tells the model Gemini is unavailable, in the chat's words, without the address it called", async () => {
    const port = await refusingPort();
    const model = createGeminiClient({
      apiKey: "test-key",
      baseUrl: `http://127.0.0.1:${port}/internal-gemini-proxy`,
      logger: pino({ level: "silent" }),
      retry: { maxAttempts: 1 },
      sleep: async () => {},
    });
    const tool = createGenerateImageTool({
      model,
      hooks: new AgentHooks(),
      store: { loadContext: async () => ({ summary: undefined, events: [] }) },
      read: async () => new Map(),
      saveFile: async () => {
        throw new Error("no picture is drawn");
      },
      settings: { model: "gemini-nano-banana-2.1" },
    });
    const outcome = await createToolRegistry([tool]).execute(
      "generate_image",
      { prompt: "a fox" },
      toolContext("1"),
    );
    expect(outcome).toEqual({
      ok: false,
      response: { error: "Gemini is unavailable (connection refused), try again in a minute." },
    });
  });
});
