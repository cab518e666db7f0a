import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import {
  eventually,
  type ServiceWorld,
  startStoppedWorld,
  startWorld,
} from "../helpers/service-process.js";
import { freePort } from "../helpers/spawn-service.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

/** The service, started with `env` on top of the world's, must exit before it runs. */
async function startFailure(w: ServiceWorld, env: Record<string, string>): Promise<string> {
  const error = await w.start(env).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return (error as Error).message;
}

describe("start-up failures say what to fix", () => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startStoppedWorld();
  });
  afterAll(() => w.close());

  it("a token Telegram does not know", async () => {
    const message = await startFailure(w, { TELEGRAM_BOT_TOKEN: "123:not-this-bot" });
    expect(message).toMatch(/service exited with 1/);
    expect(message).toMatch(/Telegram rejected TELEGRAM_BOT_TOKEN \(401 .*\): copy the token/);
    expect(message).not.toContain("not-this-bot");
  });

  it("a webhook Telegram refuses, without blaming the network", async () => {
    w.telegram.failNext("setWebhook", {
      error_code: 400,
      description: "Bad Request: bad webhook: Failed to resolve host",
    });
    const message = await startFailure(w, {});
    expect(message).toMatch(
      /Telegram refused setWebhook at start-up \(400 Bad Request: bad webhook: Failed to resolve host\).*WEBHOOK_URL must be a public HTTPS address/,
    );
    expect(message).not.toMatch(/network/);
  });

  it("a Telegram it cannot reach: it keeps trying, says so, and starts once it can", async () => {
    // Nothing listens at first, so connections are refused. (A proxy that resets each connection
    // it accepts left Node's fetch waiting, now and then, until grammY's 500 s timeout.)
    const port = await freePort();
    const apiRoot = `http://127.0.0.1:${port}`;
    const logs: Record<string, unknown>[] = [];
    const starting = w.start({ TELEGRAM_API_ROOT: apiRoot }, logs);
    const warning = await eventually(() =>
      logs.find((l) => l.msg === "cannot reach Telegram; trying again"),
    );
    expect(warning).toMatchObject({
      method: "getMe",
      api_root: apiRoot,
      cause: "connection refused (ECONNREFUSED)",
    });
    expect(logs.some((l) => l.msg === "Koroku is running")).toBe(false);
    const api = new URL(w.telegram.apiRoot);
    const proxy = await startTcpProxy({ host: api.hostname, port: Number(api.port) }, { port });
    onTestFinished(() => proxy.close());
    const started = await starting;
    started.proc.kill("SIGTERM");
    expect(await started.exited).toBe(0);
  });

  it("a DATABASE_URL of a database Koroku does not speak, without echoing its password", async () => {
    const message = await startFailure(w, { DATABASE_URL: "mysql://bot:hunter2@db/koroku" });
    expect(message).toMatch(/DATABASE_URL must be sqlite:<path>.*"mysql:" is none of these/);
    expect(message).not.toContain("hunter2");
  });
});

describe("a stop request ends start-up at once", () => {
  let w: ServiceWorld;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(() => w.close());

  /** Starts a service with `env`, waits for the log line `waitingFor`, then sends `signal`. */
  async function stopWhile(
    env: Record<string, string>,
    waitingFor: string,
    signal: NodeJS.Signals,
  ): Promise<{ exit: string; logs: Record<string, unknown>[] }> {
    const logs: Record<string, unknown>[] = [];
    let proc: ChildProcess | undefined;
    const starting = w.start(env, logs, (p) => {
      proc = p;
    });
    onTestFinished(() => {
      if (proc?.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    });
    await eventually(() => logs.some((l) => l.msg === waitingFor));
    proc?.kill(signal);
    const exit = await starting.then(
      () => "started",
      (error: Error) => error.message.split("\n")[0] ?? "",
    );
    return { exit, logs };
  }

  it("while Telegram cannot be reached (start-up would retry for ever)", async () => {
    const port = await freePort();
    // A database of its own: the world's service holds the world's.
    const dir = mkdtempSync(join(tmpdir(), "koroku-stop-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const { exit, logs } = await stopWhile(
      {
        TELEGRAM_API_ROOT: `http://127.0.0.1:${port}`,
        DATABASE_URL: `sqlite:${join(dir, "agent.db")}`,
      },
      "cannot reach Telegram; trying again",
      "SIGTERM",
    );
    expect(exit).toBe("service exited with 0 before it was ready:");
    expect(logs.find((l) => l.msg === "stopped during start-up")).toMatchObject({
      signal: "SIGTERM",
    });
  });

  it("while it waits for another service to let go of the SQLite database", async () => {
    const { exit, logs } = await stopWhile(
      {},
      "another Koroku service holds this SQLite database; waiting for it to stop",
      "SIGINT",
    );
    expect(exit).toBe("service exited with 0 before it was ready:");
    expect(logs.find((l) => l.msg === "stopped during start-up")).toMatchObject({
      signal: "SIGINT",
    });
    // The first service never noticed.
    expect((await fetch(`${w.service.baseUrl}/healthz`)).status).toBe(200);
  });
});
