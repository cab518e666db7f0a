// An MCP server written by hand over stdio (newline-delimited JSON-RPC), for what the SDK's own
// server would not send: a content block the client's schema refuses, a JSON-RPC error of 200,000
// characters. Plain enough for Node to run without a build (types are stripped, nothing else).
import { createInterface } from "node:readline";

type Request = { id?: number | string; method: string; params?: Record<string, unknown> };

const send = (message: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);

const TOOLS = [
  {
    name: "odd_block",
    description: "Returns a block newer than the SDK's",
    inputSchema: { type: "object" },
  },
  {
    name: "long_error",
    description: "Fails with a long JSON-RPC error",
    inputSchema: { type: "object" },
  },
  { name: "echo", description: "Says ok", inputSchema: { type: "object" } },
];

function answer(request: Request): Record<string, unknown> {
  switch (request.method) {
    case "initialize":
      return {
        result: {
          protocolVersion: request.params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "raw", version: "1.0.0" },
        },
      };
    case "ping":
      return { result: {} };
    case "tools/list":
      return { result: { tools: TOOLS } };
    case "tools/call":
      if (request.params?.name === "odd_block") {
        const video = { type: "video", data: "AAAA", mimeType: "video/mp4" };
        return { result: { content: [{ type: "text", text: "partly fine" }, video] } };
      }
      if (request.params?.name === "long_error") {
        return { error: { code: -32000, message: `boom ${"E".repeat(200_000)}` } };
      }
      return { result: { content: [{ type: "text", text: "ok" }] } };
    default:
      return { error: { code: -32601, message: "no such method" } };
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "") return;
  const request = JSON.parse(line) as Request;
  if (request.id !== undefined) send({ id: request.id, ...answer(request) });
});
