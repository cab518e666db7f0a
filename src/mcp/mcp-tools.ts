import type { FunctionDeclaration } from "@google/genai";
import type { Logger } from "../logger.js";
import type { BackoffPolicy } from "../retry/backoff.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import type { MediaPart } from "../session/events.js";
import { isRecord, type ToolOutcome, type ToolRegistry } from "../tools/registry.js";
import type { McpConfig } from "./config-file.js";
import { capText, convertResult } from "./results.js";
import { connectServer, type ServerConnection, type ServerStatus } from "./server-connection.js";
import { NAME_SEPARATOR } from "./tool-names.js";

export type McpTools = ToolRegistry & {
  /**
   * Each server, its state and its tools (for /tools), once each ready one has answered a ping
   * or been found gone.
   */
  servers(): Promise<ServerStatus[]>;
  /** Settles when every server's current connection attempt has ended. */
  settled(): Promise<void>;
  /** The connection of one server (tests end its process). */
  server(name: string): ServerConnection | undefined;
  close(): Promise<void>;
};

const failure = (error: string): ToolOutcome => ({ ok: false, response: { error } });

/**
 * The tools of the MCP servers in MCP_CONFIG, as a registry beside Koroku's own: declarations
 * follow the servers' lists as they change, and every result comes back capped, its images
 * stored as attachments the model sees with it.
 */
export function startMcpTools(
  config: McpConfig,
  deps: {
    logger: Logger;
    saveFile(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
    backoff?: BackoffPolicy;
  },
): McpTools {
  const servers = new Map<string, ServerConnection>();
  for (const server of config.servers) {
    servers.set(server.name, connectServer(server, { logger: deps.logger, backoff: deps.backoff }));
  }
  const maxChars = new Map(config.servers.map((s) => [s.name, s.maxOutputChars]));

  function find(name: string) {
    const at = name.indexOf(NAME_SEPARATOR);
    if (at < 0) return undefined;
    const server = servers.get(name.slice(0, at));
    const tool = server?.status().tools.find((t) => t.name === name);
    return server && tool ? { server, tool } : undefined;
  }

  return {
    declarations: (): FunctionDeclaration[] =>
      [...servers.values()].flatMap((s) => s.status().tools.map((t) => t.declaration)),
    async execute(name, args, ctx): Promise<ToolOutcome> {
      const found = find(name);
      if (!found) return failure(`unknown tool "${name}"`);
      const { server, tool } = found;
      const called = await server.call(tool.remoteName, isRecord(args) ? args : {}, ctx.signal);
      const max = maxChars.get(server.name) ?? 0;
      if (called.kind !== "result") return failure(capText(called.why, max));
      const converted = convertResult(called.result, max);
      if (converted.isError) return failure(converted.text || "the tool failed without saying why");
      const media: MediaPart[] = [];
      for (const file of converted.files) {
        const stored = await deps.saveFile(ctx.chatId, file);
        media.push({ kind: "media", media: file.media, ...stored });
      }
      return {
        ok: true,
        response: { output: converted.text },
        ...(media.length > 0 ? { media } : {}),
      };
    },
    // A server's tools may change what it holds: one call at a time, in the model's order.
    concurrencyOf: (name) => (find(name) ? 1 : undefined),
    knows: (name) => find(name) !== undefined,
    async servers() {
      await Promise.all([...servers.values()].map((s) => s.check()));
      return [...servers.values()].map((s) => s.status());
    },
    settled: async () => {
      await Promise.all([...servers.values()].map((s) => s.settled()));
    },
    server: (name) => servers.get(name),
    async close() {
      await Promise.all([...servers.values()].map((s) => s.close()));
    },
  };
}
