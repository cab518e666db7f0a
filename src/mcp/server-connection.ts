import type { FunctionDeclaration } from "@google/genai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../logger.js";
import { type BackoffPolicy, createBackoff } from "../retry/backoff.js";
import type { McpServerConfig } from "./config-file.js";
import { declarationFor } from "./schema.js";
import { IsolatedStdioTransport } from "./stdio-transport.js";
import { NAME_SEPARATOR } from "./tool-names.js";

/** Restarts of a server that died: soon at first, then at most once a minute. */
export const MCP_RESTART_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };
const MAX_TOOL_NAME = 64;
// Starting a server (npx fetching a package, a cold interpreter) takes longer than a call may.
const CONNECT_TIMEOUT_MS = 30_000;
/** A live server answers a ping at once; /tools waits no longer than this for one. */
const PING_TIMEOUT_MS = 5_000;
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]*$/;

export type ServerState = "starting" | "ready" | "unavailable" | "stopped";

export type OfferedTool = {
  /** `<server>__<tool>`: what Gemini calls it. */
  name: string;
  /** The server's own name for it. */
  remoteName: string;
  declaration: FunctionDeclaration;
};

export type ServerStatus = {
  name: string;
  state: ServerState;
  tools: readonly OfferedTool[];
  /** Tools left out, and why (a name or schema Gemini cannot take). */
  skipped: readonly { tool: string; why: string }[];
  /** Why it is unavailable, when it is. */
  error?: string;
};

export type CallResult =
  | { kind: "result"; result: CallToolResult }
  | { kind: "unavailable"; why: string }
  | { kind: "failed"; why: string };

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The client's own check refused what the server sent (zod's error, with its issues): the server
 * answered and is still there, so this is not a lost connection.
 */
function refusedBySchema(error: unknown): string | undefined {
  const issues = error instanceof Error ? (error as { issues?: unknown }).issues : undefined;
  if (!Array.isArray(issues)) return undefined;
  return issues
    .slice(0, 3)
    .map((issue: { path?: unknown[]; message?: string }) =>
      [issue.path?.join("."), issue.message].filter(Boolean).join(": "),
    )
    .join("; ");
}

/**
 * One MCP server: connected at start, its tools listed (and listed again when it says they
 * changed), restarted with backoff when it dies. Meanwhile its tools stay offered and answer
 * that the server is unavailable.
 */
export function connectServer(
  config: McpServerConfig,
  deps: {
    logger: Logger;
    /** Told whenever the offered tools or the state change. */
    onChange?: () => void;
    backoff?: BackoffPolicy;
  },
) {
  const log = deps.logger.child({ mcp_server: config.name });
  const backoff = createBackoff(deps.backoff ?? MCP_RESTART_BACKOFF);
  let state: ServerState = "starting";
  let error: string | undefined;
  let client: Client | undefined;
  let transport: Transport | undefined;
  let tools: OfferedTool[] = [];
  let skipped: { tool: string; why: string }[] = [];
  let retryTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** Settles each time a connection attempt ends (tests and /tools wait on it). */
  let attempt: Promise<void> = Promise.resolve();

  const setState = (next: ServerState, why?: string) => {
    state = next;
    error = why;
    deps.onChange?.();
  };

  function offer(listed: readonly Tool[]) {
    const offered: OfferedTool[] = [];
    const left: { tool: string; why: string }[] = [];
    for (const tool of listed) {
      const name = `${config.name}${NAME_SEPARATOR}${tool.name}`;
      if (!TOOL_NAME.test(tool.name) || name.length > MAX_TOOL_NAME) {
        left.push({
          tool: tool.name,
          why: `"${name}" is not a name Gemini takes (letters, digits, "_", ".", ":", "-", ${MAX_TOOL_NAME} characters at most)`,
        });
        continue;
      }
      const converted = declarationFor(name, tool.description, tool.inputSchema);
      if ("why" in converted) left.push({ tool: tool.name, why: converted.why });
      else offered.push({ name, remoteName: tool.name, declaration: converted.declaration });
    }
    for (const { tool, why } of left)
      log.warn({ tool, why }, "an MCP tool is left out: Gemini cannot take it");
    tools = offered;
    skipped = left;
    log.info({ tools: offered.map((t) => t.remoteName) }, "MCP server's tools offered");
    deps.onChange?.();
  }

  async function listAll(current: Client): Promise<Tool[]> {
    const all: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await current.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: Math.max(config.timeoutMs, CONNECT_TIMEOUT_MS),
      });
      all.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return all;
  }

  function makeTransport(): Transport {
    const { transport: spec } = config;
    if (spec.kind === "stdio") {
      return new IsolatedStdioTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        onStderr: (line) => log.debug({ stderr: line }, "MCP server wrote to stderr"),
      });
    }
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: { headers: { ...spec.headers } },
    });
  }

  async function connect(): Promise<void> {
    const current = new Client(
      { name: "koroku", version: "1" },
      {
        capabilities: {},
        listChanged: {
          tools: {
            debounceMs: 0,
            onChanged: (failure, listed) => {
              if (failure)
                log.warn({ err: failure }, "could not list the MCP server's changed tools");
              else if (listed && client === current) offer(listed);
            },
          },
        },
      },
    );
    const opened = makeTransport();
    current.onclose = () => {
      if (client !== current || stopped) return;
      client = undefined;
      log.warn("MCP server closed the connection; restarting it");
      restartLater("it closed the connection");
    };
    try {
      await current.connect(opened, { timeout: Math.max(config.timeoutMs, CONNECT_TIMEOUT_MS) });
      client = current;
      transport = opened;
      offer(await listAll(current));
      backoff.reset();
      setState("ready");
    } catch (failure) {
      client = undefined;
      await current.close().catch(() => {});
      log.warn({ err: failure }, "could not start the MCP server; trying again later");
      restartLater(messageOf(failure));
    }
  }

  function restartLater(why: string) {
    if (stopped || retryTimer) return;
    setState("unavailable", why);
    const delay = backoff.next();
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (!stopped) attempt = connect();
    }, delay);
    retryTimer.unref();
  }

  /** A failure of the connection itself (not an MCP error the server answered): start over. */
  async function lost(current: Client, why: string) {
    if (client !== current) return;
    client = undefined;
    log.warn({ why }, "lost the MCP server; restarting it");
    await current.close().catch(() => {});
    restartLater(why);
  }

  async function call(
    remoteName: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<CallResult> {
    const current = client;
    if (!current || state !== "ready") {
      return {
        kind: "unavailable",
        why: `the MCP server "${config.name}" is unavailable (${error ?? state}); try again later`,
      };
    }
    try {
      const result = await current.callTool({ name: remoteName, arguments: args }, undefined, {
        timeout: config.timeoutMs,
        maxTotalTimeout: config.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      return { kind: "result", result: result as CallToolResult };
    } catch (failure) {
      if (failure instanceof McpError) {
        if (failure.code === ErrorCode.RequestTimeout) {
          return {
            kind: "failed",
            why: `the tool did not answer within ${config.timeoutMs / 1000} s`,
          };
        }
        return { kind: "failed", why: failure.message };
      }
      if (signal?.aborted) return { kind: "failed", why: "stopped by the user" };
      const refused = refusedBySchema(failure);
      if (refused !== undefined) {
        return {
          kind: "failed",
          why: `the tool's result does not follow the MCP schema (${refused}), so it was not read; the tool may have run`,
        };
      }
      await lost(current, messageOf(failure));
      return {
        kind: "unavailable",
        why: `the MCP server "${config.name}" is unavailable (${messageOf(failure)}); try again later`,
      };
    }
  }

  /**
   * Asks a ready server whether it can still be reached: a Streamable HTTP server that went away
   * is otherwise found gone only by the next call. Only a failure of the connection itself
   * restarts it; a server that answers late, or with an error, is busy or old, not gone.
   */
  async function check(): Promise<void> {
    const current = client;
    if (!current || state !== "ready") return;
    try {
      await current.ping({ timeout: Math.min(config.timeoutMs, PING_TIMEOUT_MS) });
    } catch (failure) {
      if (!(failure instanceof McpError) && refusedBySchema(failure) === undefined) {
        await lost(current, messageOf(failure));
      }
    }
  }

  attempt = connect();

  return {
    name: config.name,
    call,
    check,
    status: (): ServerStatus => ({
      name: config.name,
      state,
      tools,
      skipped,
      ...(error ? { error } : {}),
    }),
    /** Settles when the current connection attempt has ended, however it ended. */
    settled: () => attempt,
    /** The stdio server's process id, while it runs. */
    pid: (): number | undefined =>
      transport instanceof IsolatedStdioTransport ? transport.pid : undefined,
    async close() {
      stopped = true;
      clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      state = "stopped";
      await current?.close().catch(() => {});
    },
  };
}

export type ServerConnection = ReturnType<typeof connectServer>;
