import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { z } from "zod";
import type { Workspaces } from "../scope/workspaces.js";
import { endGroupWithLeader, endGroupWithProcess, signalGroup } from "./process-group.js";
import { defineTool } from "./registry.js";

export const RUN_COMMAND_TIMEOUT_MS = 20_000;
export const RUN_COMMAND_MAX_OUTPUT_BYTES = 16 * 1024;
export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

interface RunLimits {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** The user stopped the answer: the command is killed at once. */
  signal?: AbortSignal;
}

/** What the model reads of a command the user's stop killed. */
export const COMMAND_STOPPED = "killed: the user stopped the answer while the command ran";

type StreamName = "stdout" | "stderr";

/** Keeps the first bytes of stdout and stderr together up to the cap, counting the rest. */
function captureOutput(child: Record<StreamName, Readable>) {
  let room = RUN_COMMAND_MAX_OUTPUT_BYTES;
  const kept: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
  const dropped: Record<StreamName, number> = { stdout: 0, stderr: 0 };
  for (const name of ["stdout", "stderr"] as const) {
    child[name].on("data", (chunk: Buffer) => {
      const keep = Math.min(room, chunk.length);
      if (keep > 0) kept[name].push(chunk.subarray(0, keep));
      dropped[name] += chunk.length - keep;
      room -= keep;
    });
  }
  return (name: StreamName): string => {
    const text = Buffer.concat(kept[name]).toString("utf8");
    return dropped[name] > 0
      ? `${text}\n[output truncated: ${dropped[name]} more bytes not shown]`
      : text;
  };
}

function runShell(command: string, limits: RunLimits): Promise<CommandResult> {
  const { signal } = limits;
  if (signal?.aborted) return Promise.reject(new Error(COMMAND_STOPPED));
  return new Promise((resolve, reject) => {
    // detached: the shell leads its own process group, so a kill reaches everything it started.
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: limits.cwd,
      env: limits.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const textOf = captureOutput(child);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      signalGroup(child, "SIGKILL");
    }, limits.timeoutMs);
    const stop = () => signalGroup(child, "SIGKILL");
    signal?.addEventListener("abort", stop, { once: true });
    const settle = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    };
    // Background jobs left behind would keep the pipes open past the shell's exit.
    endGroupWithLeader(child);
    // Its timer goes with this process: a command must not run on after it, nor again after the
    // restart beside the one still running.
    endGroupWithProcess(child);
    child.on("error", (error) => {
      settle();
      reject(error);
    });
    child.on("close", (code) => {
      settle();
      if (signal?.aborted) {
        reject(new Error(COMMAND_STOPPED));
        return;
      }
      resolve({ exitCode: code, stdout: textOf("stdout"), stderr: textOf("stderr"), timedOut });
    });
  });
}

export function createRunCommandTool(deps: {
  workspaces: Workspaces;
  timeoutMs?: number;
  /** Only PATH and LANG are taken from it: the command must not see the bot's secrets. */
  env?: NodeJS.ProcessEnv;
}) {
  const timeoutMs = deps.timeoutMs ?? RUN_COMMAND_TIMEOUT_MS;
  const baseEnv = deps.env ?? process.env;
  return defineTool({
    name: "run_command",
    maxConcurrent: 1,
    description:
      "Runs a shell command (/bin/sh -c) in the workspace directory of this chat. It is killed after " +
      `${timeoutMs / 1000} s; stdout and stderr together are cut at ` +
      `${RUN_COMMAND_MAX_OUTPUT_BYTES / 1024} KiB.`,
    schema: z.object({
      command: z.string().trim().min(1).describe("The shell command line to run"),
    }),
    async run(args, ctx) {
      const cwd = await deps.workspaces.dirOf(ctx.scope);
      const env = {
        PATH: baseEnv.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        HOME: cwd,
        LANG: baseEnv.LANG ?? "C.UTF-8",
      };
      return runShell(args.command, { cwd, env, timeoutMs, signal: ctx.signal });
    },
  });
}
