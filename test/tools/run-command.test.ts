import { readFileSync } from "node:fs";
import { readFile, realpath } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { createToolRegistry, type ToolOutcome } from "../../src/tools/registry.js";
import {
  COMMAND_STOPPED,
  type CommandResult,
  createRunCommandTool,
  RUN_COMMAND_MAX_OUTPUT_BYTES,
} from "../../src/tools/run-command.js";
import { startHarness } from "../helpers/harness.js";
import { runModuleScript } from "../helpers/module-script.js";
import { eventually } from "../helpers/service-process.js";
import { REPO_ROOT } from "../helpers/spawn-service.js";
import { toolContext } from "../helpers/tool-context.js";
import { errorOf, oneFolder, outputOf, useWorkspaceDirs } from "./temp-dir.js";

async function isGone(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  // A killed child of a killed shell may linger as a zombie until something reaps it.
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat === "" || stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("run_command", () => {
  const dirs = useWorkspaceDirs();
  const run = (
    command: unknown,
    options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
  ): Promise<ToolOutcome> =>
    createToolRegistry([
      createRunCommandTool({
        workspaces: oneFolder(dirs().ws),
        timeoutMs: options.timeoutMs,
        env: options.env,
      }),
    ]).execute("run_command", { command }, toolContext("1"));

  it("returns the exit code, stdout and stderr", async () => {
    expect(outputOf(await run("echo hi; echo oops >&2; exit 3"))).toEqual({
      exitCode: 3,
      stdout: "hi\n",
      stderr: "oops\n",
      timedOut: false,
    });
  });

  it("runs in the workspace with HOME there and no secrets in the environment", async () => {
    const env = {
      PATH: process.env.PATH,
      LANG: "C.UTF-8",
      GEMINI_API_KEY: "gemini-secret",
      TELEGRAM_BOT_TOKEN: "telegram-secret",
    };
    const output = outputOf(await run("pwd; env", { env })) as CommandResult;
    const ws = await realpath(dirs().ws);
    const [cwd, ...variables] = output.stdout.trim().split("\n");
    expect(cwd).toBe(ws);
    expect(variables).toContain(`HOME=${ws}`);
    expect(variables).toContain("LANG=C.UTF-8");
    expect(output.stdout).not.toContain("secret");
  });

  it("kills the whole process group at the time limit", async () => {
    const started = Date.now();
    const output = outputOf(
      await run("echo started; sleep 30 & echo $!; wait", { timeoutMs: 300 }),
    ) as CommandResult;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(output).toMatchObject({ exitCode: null, timedOut: true });
    const [first, pid] = output.stdout.trim().split("\n");
    expect(first).toBe("started");
    await waitFor(() => isGone(Number(pid)), `background sleep ${pid} to die`);
  });

  it("kills the command's process group at once when the user stops the answer", async () => {
    const stop = new AbortController();
    const pidFile = path.join(dirs().ws, "sleep.pid");
    const tool = createToolRegistry([createRunCommandTool({ workspaces: oneFolder(dirs().ws) })]);
    const started = Date.now();
    const outcome = tool.execute(
      "run_command",
      { command: "sleep 15 & echo $! > sleep.pid; wait" },
      toolContext("1", { signal: stop.signal }),
    );
    await waitFor(
      async () => /^\d+\n$/.test(await readFile(pidFile, "utf8").catch(() => "")),
      "the pid file",
    );
    stop.abort();
    expect(errorOf(await outcome)).toBe(COMMAND_STOPPED);
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number(await readFile(pidFile, "utf8"));
    await waitFor(() => isGone(pid), `sleep ${pid} to die`);
    // A stop that came first runs nothing.
    expect(
      errorOf(
        await tool.execute(
          "run_command",
          { command: "touch ran" },
          toolContext("1", { signal: stop.signal }),
        ),
      ),
    ).toBe(COMMAND_STOPPED);
    await expect(readFile(path.join(dirs().ws, "ran"))).rejects.toThrow();
  });

  it("kills background jobs the shell leaves behind when it exits", async () => {
    const output = outputOf(await run("sleep 30 & echo $!")) as CommandResult;
    expect(output.timedOut).toBe(false);
    await waitFor(() => isGone(Number(output.stdout.trim())), "the background job to die");
  });

  it("does not wait for a process that left the group and holds the output open", async () => {
    const pidFile = path.join(dirs().ws, "escaped.pid");
    try {
      const output = outputOf(
        // The shell ends only once the escaped process has left its group, or the kill of the
        // group at the shell's exit could still reach it.
        await run(
          "setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'; " +
            "while [ ! -s escaped.pid ]; do sleep 0.01; done; echo shell-done",
        ),
      ) as CommandResult;
      expect(output).toMatchObject({ stdout: "shell-done\n", timedOut: false });
    } finally {
      await waitFor(
        async () => /^\d+\n$/.test(await readFile(pidFile, "utf8").catch(() => "")),
        "the pid file",
      );
      process.kill(Number(await readFile(pidFile, "utf8")), "SIGKILL");
    }
  });

  it("kills the command when Koroku exits without ending it (a crash), its time limit gone with it", async () => {
    const dir = dirs().ws;
    const tool = pathToFileURL(path.join(REPO_ROOT, "dist/src/tools/run-command.js")).href;
    const { stdout } = await runModuleScript(`
      import { existsSync, readFileSync } from "node:fs";
      import { createRunCommandTool } from ${JSON.stringify(tool)};
      const tool = createRunCommandTool({
        workspaces: { dirOf: async () => ${JSON.stringify(dir)}, move: async () => 0 },
        timeoutMs: 60000,
      });
      tool.run({ command: "echo $$ > pid; exec sleep 30" }, { chatId: "1", scope: { kind: "private", userId: 1 } });
      const pid = ${JSON.stringify(path.join(dir, "pid"))};
      while (!existsSync(pid) || readFileSync(pid, "utf8").trim() === "") await new Promise((r) => setTimeout(r, 10));
      console.log(readFileSync(pid, "utf8").trim());
      process.exit(1);
    `);
    const pid = Number(stdout.trim());
    expect(pid).toBeGreaterThan(0);
    const running = () => {
      try {
        process.kill(pid, 0);
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
      } catch {
        return false;
      }
    };
    try {
      await eventually(() => !running(), 5_000);
    } finally {
      if (running()) process.kill(pid, "SIGKILL");
    }
  });

  it("caps stdout and stderr together and notes what it cut", async () => {
    const output = outputOf(
      await run("head -c 40000 /dev/zero | tr '\\0' a; head -c 10000 /dev/zero | tr '\\0' b >&2"),
    ) as CommandResult;
    const kept = (text: string) =>
      text.replace(/\n\[output truncated: \d+ more bytes not shown\]$/, "");
    expect(kept(output.stdout).length + kept(output.stderr).length).toBe(
      RUN_COMMAND_MAX_OUTPUT_BYTES,
    );
    expect(`${output.stdout}${output.stderr}`).toMatch(/\[output truncated: \d+ more bytes/);
    const shown = kept(output.stdout).length + kept(output.stderr).length;
    const dropped = [...`${output.stdout}${output.stderr}`.matchAll(/(\d+) more bytes/g)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
    expect(shown + dropped).toBe(50_000);
  });

  it("refuses an empty command", async () => {
    expect(errorOf(await run("  "))).toMatch(/command: /);
    expect(errorOf(await run(undefined))).toMatch(/command: .*expected string/);
  });
});

describe("the shell tool switched on", () => {
  it("is announced with a warning of what it gives the model", async () => {
    const h = await startHarness({ env: { ENABLE_SHELL_TOOL: "true" } });
    try {
      const warning = h.logs.find((l) => l.msg.startsWith("ENABLE_SHELL_TOOL is on"));
      expect(warning?.level).toBe(40);
      expect(warning?.msg).toContain("token and API key");
    } finally {
      await h.close();
    }
  });
});
