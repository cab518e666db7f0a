import { type ChildProcess, spawn } from "node:child_process";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { endGroupWithLeader, endGroupWithProcess, signalGroup } from "../tools/process-group.js";

// The server's stderr is its log: kept short for ours (it may be chatty, or hostile).
const MAX_STDERR_LINE = 500;

/**
 * What a server inherits of Koroku's environment: the SDK's default set on POSIX, which is what
 * the same `mcpServers` entry gets from Claude Desktop (servers look for `npx` on PATH, and for
 * their settings under HOME). None of them holds a secret.
 */
export const INHERITED_ENV = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"] as const;

/**
 * A server's environment: INHERITED_ENV from `parent`, then what its entry in the file sets.
 * Nothing else of Koroku's reaches it: not the bot token, not the API key, not DATABASE_URL.
 */
export function serverEnvironment(
  configured: Readonly<Record<string, string>>,
  parent: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = parent[name];
    // A bash function exported through the environment ("() { …") is code, not a value.
    if (value !== undefined && !value.startsWith("()")) env[name] = value;
  }
  return { ...env, ...configured };
}

/** A stdio transport whose child gets serverEnvironment and nothing else. */
export class IsolatedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private readonly buffer = new ReadBuffer();

  constructor(
    private readonly params: {
      command: string;
      args: readonly string[];
      env: Readonly<Record<string, string>>;
      /** Each line the server writes to stderr. */
      onStderr?: (line: string) => void;
    },
  ) {}

  start(): Promise<void> {
    const { command, args, env } = this.params;
    return new Promise((resolve, reject) => {
      // detached: the server leads a process group, so that what it starts (the server a wrapper
      // such as npx runs) is ended with it.
      const child = spawn(command, [...args], {
        env: serverEnvironment(env),
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        detached: true,
      });
      this.child = child;
      endGroupWithLeader(child);
      endGroupWithProcess(child);
      child.once("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", () => {
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
          for (
            let message = this.buffer.readMessage();
            message;
            message = this.buffer.readMessage()
          )
            this.onmessage?.(message);
        } catch (error) {
          this.onerror?.(error as Error);
        }
      });
      let pending = "";
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (text: string) => {
        const lines = (pending + text).split("\n");
        pending = (lines.pop() ?? "").slice(-MAX_STDERR_LINE);
        for (const line of lines)
          if (line.trim() !== "") this.params.onStderr?.(line.slice(0, MAX_STDERR_LINE));
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin) {
        reject(new Error("the server's process is not running"));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", () => resolve());
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    child.stdin?.end();
    // A server that ignores its stdin closing is ended; one that ignores that too, killed.
    const term = setTimeout(() => signalGroup(child, "SIGTERM"), 2_000);
    const kill = setTimeout(() => signalGroup(child, "SIGKILL"), 4_000);
    await closed;
    clearTimeout(term);
    clearTimeout(kill);
  }

  /** The server's process id, while it runs (tests end it to see a restart). */
  get pid(): number | undefined {
    return this.child?.pid;
  }
}
