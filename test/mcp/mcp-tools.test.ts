import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { McpServerConfig } from "../../src/mcp/config-file.js";
import { type McpTools, startMcpTools } from "../../src/mcp/mcp-tools.js";
import { INHERITED_ENV } from "../../src/mcp/stdio-transport.js";
import { type NewAttachment, sha256Hex } from "../../src/session/attachments.js";
import {
  type HttpMcpServer,
  INJECTION,
  LONG_TOOL_NAME,
  startHttpMcpServer,
} from "../fakes/mcp-server.js";
import { captureLogger } from "../helpers/logs.js";
import { toolContext } from "../helpers/tool-context.js";

const SCRIPT = fileURLToPath(new URL("../fakes/mcp-server.ts", import.meta.url));
const RAW_SCRIPT = fileURLToPath(new URL("../fakes/raw-mcp-server.ts", import.meta.url));

const stdioServer = (more: Partial<McpServerConfig> = {}): McpServerConfig => ({
  name: "fake",
  transport: { kind: "stdio", command: process.execPath, args: [SCRIPT], env: { GREETING: "hi" } },
  tools: {},
  timeoutMs: 10_000,
  maxOutputChars: 1_000,
  ...more,
});
/** A server that sends what the SDK's own server would not (test/fakes/raw-mcp-server.ts). */
const rawServer = (): McpServerConfig =>
  stdioServer({
    name: "raw",
    transport: { kind: "stdio", command: process.execPath, args: [RAW_SCRIPT], env: {} },
  });

let running: McpTools | undefined;
let http: HttpMcpServer | undefined;
afterEach(async () => {
  await running?.close();
  await http?.close();
  running = undefined;
  http = undefined;
});

// A restart in tests comes at once.
const AT_ONCE = { baseMs: 1, maxMs: 1 };

function start(servers: McpServerConfig[], backoff = AT_ONCE) {
  const { logger, lines } = captureLogger();
  const saved: NewAttachment[] = [];
  running = startMcpTools(
    { servers, policies: {}, secrets: [] },
    {
      logger,
      saveFile: async (_chat, file) => {
        saved.push(file);
        return {
          sha256: sha256Hex(file.bytes),
          mimeType: file.mimeType,
          size: file.bytes.byteLength,
        };
      },
      backoff,
    },
  );
  return { tools: running, lines, saved };
}

const ctx = toolContext("42");

describe("MCP tools over stdio", () => {
  it("offers the server's tools as server__tool and runs them", async () => {
    const { tools } = start([stdioServer()]);
    await tools.settled();
    const names = tools.declarations().map((d) => d.name);
    expect(names).toContain("fake__echo");
    expect(
      tools.declarations().find((d) => d.name === "fake__echo")?.parametersJsonSchema,
    ).toMatchObject({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    });
    expect(await tools.execute("fake__echo", { text: "hello" }, ctx)).toEqual({
      ok: true,
      response: { output: "echo: hello" },
    });
    expect((await tools.servers())[0]).toMatchObject({ name: "fake", state: "ready" });
  });

  it("leaves out a tool Gemini cannot take, and says why", async () => {
    const { tools, lines } = start([stdioServer()]);
    await tools.settled();
    const why = `"fake__${LONG_TOOL_NAME}" is not a name Gemini takes (letters, digits, "_", ".", ":", "-", 64 characters at most)`;
    expect((await tools.servers())[0]?.skipped).toEqual([{ tool: LONG_TOOL_NAME, why }]);
    expect(tools.declarations().map((d) => d.name)).not.toContain(`fake__${LONG_TOOL_NAME}`);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "an MCP tool is left out: Gemini cannot take it",
        tool: LONG_TOOL_NAME,
        why,
      }),
    );
  });

  it("gives the server the environment the file gives it and the inherited set, no secret", async () => {
    vi.stubEnv("TELEGRAM_BOT_TOKEN", "123456:must-not-leak");
    vi.stubEnv("GEMINI_API_KEY", "must-not-leak");
    vi.stubEnv("HOME", "/home/koroku");
    vi.stubEnv("TERM", "xterm");
    try {
      const { tools } = start([stdioServer()]);
      await tools.settled();
      const outcome = await tools.execute("fake__env", {}, ctx);
      const env = JSON.parse(String((outcome.response as { output: string }).output)) as Record<
        string,
        string
      >;
      const inherited = INHERITED_ENV.filter((name) => process.env[name] !== undefined);
      expect(Object.keys(env).sort()).toEqual(["GREETING", ...inherited].sort());
      expect(env).toMatchObject({ GREETING: "hi", HOME: "/home/koroku", TERM: "xterm" });
      expect(JSON.stringify(env)).not.toContain("must-not-leak");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("turns images into stored files the model sees, and resources into text", async () => {
    const { tools, saved } = start([stdioServer()]);
    await tools.settled();
    const picture = await tools.execute("fake__pixel", {}, ctx);
    expect(picture).toMatchObject({
      ok: true,
      response: { output: "here is the picture\n[image: image/png, attached as file 1]" },
      media: [{ kind: "media", media: "photo", mimeType: "image/png" }],
    });
    expect(saved[0]?.bytes.subarray(1, 4).toString()).toBe("PNG");
    expect(await tools.execute("fake__note", {}, ctx)).toMatchObject({
      response: { output: "[resource note://1]\nthe note's words" },
    });
  });

  it("cuts a huge output, answers a tool's error, and times a slow call out", async () => {
    const { tools } = start([stdioServer({ timeoutMs: 500 })]);
    await tools.settled();
    const huge = await tools.execute("fake__huge", { size: 100_000 }, ctx);
    const output = String((huge.response as { output: string }).output);
    expect(output.length).toBeLessThan(1_200);
    expect(output).toContain(
      "[cut: the tool returned 100000 characters; only the first 1000 are kept]",
    );
    expect(await tools.execute("fake__fail", {}, ctx)).toEqual({
      ok: false,
      response: { error: "it went wrong" },
    });
    expect(await tools.execute("fake__slow", { ms: 5_000 }, ctx)).toEqual({
      ok: false,
      response: { error: "the tool did not answer within 0.5 s" },
    });
    // The server still answers after the timeout.
    expect(await tools.execute("fake__echo", { text: "still" }, ctx)).toMatchObject({ ok: true });
  });

  it("reads a result the client's schema refuses as a failed call, not a lost server", async () => {
    const { tools } = start([rawServer()]);
    await tools.settled();
    const pid = tools.server("raw")?.pid();
    const odd = await tools.execute("raw__odd_block", {}, ctx);
    expect(odd.ok).toBe(false);
    const why = String((odd.response as { error: string }).error);
    expect(why).toMatch(/^the tool's result does not follow the MCP schema \(content\.1/);
    expect(why).toContain("the tool may have run");
    expect(why).not.toContain("unavailable");
    expect(tools.server("raw")?.pid()).toBe(pid);
    expect(await tools.execute("raw__echo", {}, ctx)).toEqual({
      ok: true,
      response: { output: "ok" },
    });
  });

  it("holds a tool's JSON-RPC error to the server's output cap", async () => {
    const { tools } = start([rawServer()]);
    await tools.settled();
    const failed = await tools.execute("raw__long_error", {}, ctx);
    const why = String((failed.response as { error: string }).error);
    expect(why).toContain("boom");
    expect(why.length).toBeLessThan(1_200);
    expect(why).toContain("only the first 1000 are kept]");
  });

  it("restarts a server that died; its tools answer unavailable meanwhile", async () => {
    // The restart waits a while (and the server takes a while to start): time to call it.
    const { tools, lines } = start([stdioServer()], { baseMs: 500, maxMs: 500 });
    await tools.settled();
    const before = tools.server("fake")?.pid();
    await tools.execute("fake__crash", {}, ctx);
    await vi.waitFor(() => expect(lines.some((l) => l.msg.includes("restarting"))).toBe(true), {
      interval: 5,
    });
    expect(await tools.execute("fake__echo", { text: "now?" }, ctx)).toEqual({
      ok: false,
      response: {
        error: 'the MCP server "fake" is unavailable (it closed the connection); try again later',
      },
    });
    await vi.waitFor(
      async () => {
        expect((await tools.servers())[0]?.state).toBe("ready");
        expect(tools.server("fake")?.pid()).not.toBe(before);
      },
      { timeout: 20_000 },
    );
    expect(await tools.execute("fake__echo", { text: "back" }, ctx)).toMatchObject({
      response: { output: "echo: back" },
    });
  });

  it("answers unavailable while the server cannot start", async () => {
    const { tools } = start([
      stdioServer({
        transport: { kind: "stdio", command: "/nonexistent/server", args: [], env: {} },
      }),
    ]);
    await tools.settled();
    expect((await tools.servers())[0]?.state).toBe("unavailable");
    expect(await tools.execute("fake__echo", { text: "x" }, ctx)).toMatchObject({ ok: false });
  });

  it("follows tools/list_changed", async () => {
    const { tools } = start([stdioServer()]);
    await tools.settled();
    expect(tools.declarations().map((d) => d.name)).not.toContain("fake__late");
    await tools.execute("fake__grow", {}, ctx);
    await vi.waitFor(() => expect(tools.declarations().map((d) => d.name)).toContain("fake__late"));
    expect(await tools.execute("fake__late", {}, ctx)).toMatchObject({
      response: { output: "late one" },
    });
  });

  it("returns an injection as plain data", async () => {
    const { tools } = start([stdioServer()]);
    await tools.settled();
    expect(await tools.execute("fake__inject", {}, ctx)).toEqual({
      ok: true,
      response: { output: INJECTION },
    });
  });
});

describe("MCP tools over Streamable HTTP", () => {
  /** The config of the test's HTTP server as "web", with the bearer token it sends. */
  const webServer = (url: string, token = "s3cret-token") => ({
    ...stdioServer(),
    name: "web",
    transport: { kind: "http" as const, url, headers: { Authorization: `Bearer ${token}` } },
  });

  it("connects with the bearer token and runs a tool", async () => {
    http = await startHttpMcpServer("s3cret-token");
    const { tools } = start([webServer(http.url)]);
    await tools.settled();
    expect((await tools.servers())[0]?.state).toBe("ready");
    expect(await tools.execute("web__echo", { text: "over http" }, ctx)).toEqual({
      ok: true,
      response: { output: "echo: over http" },
    });
    await tools.execute("web__grow", {}, ctx);
    await vi.waitFor(() => expect(tools.declarations().map((d) => d.name)).toContain("web__late"));
  });

  it("finds a Streamable HTTP server gone when /tools asks, before any call does", async () => {
    http = await startHttpMcpServer("s3cret-token");
    const { tools, lines } = start([webServer(http.url)], { baseMs: 60_000, maxMs: 60_000 });
    await tools.settled();
    expect((await tools.servers())[0]?.state).toBe("ready");
    await http.close();
    expect((await tools.servers())[0]).toMatchObject({ state: "unavailable" });
    expect(lines.some((l) => l.msg === "lost the MCP server; restarting it")).toBe(true);
  });

  it("answers unavailable while the server is away, and reconnects with backoff when it is back", async () => {
    http = await startHttpMcpServer("s3cret-token");
    const { url } = http;
    const { tools, lines } = start([webServer(url)], { baseMs: 20, maxMs: 200 });
    await tools.settled();
    await http.close();
    const unavailable = {
      ok: false,
      response: {
        error: expect.stringMatching(
          /^the MCP server "web" is unavailable \(.+\); try again later$/,
        ),
      },
    };
    // The call that finds it gone, and the calls while it stays away.
    expect(await tools.execute("web__echo", { text: "gone?" }, ctx)).toMatchObject(unavailable);
    const failedAttempts = () =>
      lines.filter((l) => l.msg === "could not start the MCP server; trying again later").length;
    await vi.waitFor(() => expect(failedAttempts()).toBeGreaterThanOrEqual(2), { timeout: 20_000 });
    expect((await tools.servers())[0]?.state).toBe("unavailable");
    expect(await tools.execute("web__echo", { text: "still gone?" }, ctx)).toMatchObject(
      unavailable,
    );

    http = await startHttpMcpServer("s3cret-token", Number(new URL(url).port));
    await vi.waitFor(async () => expect((await tools.servers())[0]?.state).toBe("ready"), {
      timeout: 20_000,
    });
    expect(await tools.execute("web__echo", { text: "back" }, ctx)).toEqual({
      ok: true,
      response: { output: "echo: back" },
    });
  });

  it("is unavailable with a wrong token", async () => {
    http = await startHttpMcpServer("s3cret-token");
    const { tools } = start([webServer(http.url, "nope")]);
    await tools.settled();
    expect((await tools.servers())[0]).toMatchObject({ state: "unavailable" });
    expect(await tools.execute("web__echo", { text: "x" }, ctx)).toMatchObject({ ok: false });
  });
});
