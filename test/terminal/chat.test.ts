import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { STOPPED_CALL } from "../../src/agent/turn.js";
import type { App } from "../../src/app.js";
import { USER_DECLINED } from "../../src/approvals/gate.js";
import { createLogger } from "../../src/logger.js";
import { scopeName, scopeOfKey } from "../../src/scope/recall-scope.js";
import { APPROVAL_QUESTION } from "../../src/terminal/approval-prompt.js";
import { runTerminalChat } from "../../src/terminal/chat.js";
import { readableLogLines, TERMINAL_LOG_LEVEL } from "../../src/terminal/log-lines.js";
import { TOOLS_USAGE } from "../../src/terminal/tools-command.js";
import { call, status, streamed, text } from "../fakes/gemini.js";
import { type Harness, SUMMARY_MODEL, startHarness } from "../helpers/harness.js";
import { refusingPort } from "../helpers/refusing-port.js";

const BANNER =
  "Koroku — type a message; `clear` wipes the history, `history [n]` replays it, `tools` lists the tools, `exit` quits (each with or without a /).";

type Terminal = {
  /** Resolves when runTerminalChat returns. */
  done: Promise<void>;
  lines(): string[];
  /** Everything printed, the line being written included, without escape sequences. */
  shown(): string;
  /** Everything printed, escape sequences included. */
  raw(): string;
  type(...lines: string[]): void;
  /** Ctrl-D: the end of the input. */
  end(): void;
  /** Polls until a printed line equals `line`. */
  until(line: string): Promise<void>;
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's escape sequences.
const ESCAPES = /\x1b\[[0-9;]*[A-Za-z]|\r/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: colours and dim text.
const STYLES = /\x1b\[[0-9;]*m/g;

function openTerminal(app: App, terminal = false): Terminal {
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = "";
  output.on("data", (chunk: Buffer) => {
    printed += chunk.toString("utf8");
  });
  const lines = () => printed.replace(ESCAPES, "").split("\n").slice(0, -1);
  return {
    done: runTerminalChat({ app, input, output, terminal }),
    lines,
    shown: () => printed.replace(ESCAPES, ""),
    raw: () => printed,
    type: (...typed) => {
      for (const line of typed) input.write(`${line}\n`);
    },
    end: () => input.end(),
    until: (line) => vi.waitFor(() => expect(lines()).toContain(line), { timeout: 30_000 }),
  };
}

describe("terminal chat", () => {
  let h: Harness;
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });

  it("replays the stored conversation of chat `local`, tool calls included, then the banner", async () => {
    h = await startHarness();
    h.fake.script(
      call("get_current_time"),
      call("read_file", { path: "missing.txt" }),
      text("It is noon."),
      text("elsewhere"),
    );
    await h.app.agent.runTurn("local", { text: "what time is it?" });
    await h.app.agent.runTurn("other", { text: "another chat" });

    const terminal = openTerminal(h.app);
    terminal.end();
    await terminal.done;

    expect(terminal.lines()).toEqual([
      "You: what time is it?",
      "✓ get_current_time {}",
      '✗ read_file {"path":"missing.txt"}',
      "Koroku: It is noon.",
      BANNER,
    ]);
  });

  it("runs a turn per non-empty line and prints the answer", async () => {
    h = await startHarness();
    // The slow first answer makes the later lines arrive, and the input end, while it runs.
    h.fake.script({ ...text("Hello there"), delayMs: 50 }, text("Still here"));
    const terminal = openTerminal(h.app);
    terminal.type("", "hi", "   ", "and again");
    terminal.end();
    await terminal.done;

    expect(terminal.lines()).toEqual([BANNER, "Koroku: Hello there", "Koroku: Still here"]);
    expect(h.fake.requests).toHaveLength(2);
    const events = (await h.app.store.loadContext("local")).events;
    expect(events.map((e) => e.event.role)).toEqual(["user", "model", "user", "model"]);
  });

  it("prints each tool call while the turn is still running", async () => {
    h = await startHarness();
    const terminal = openTerminal(h.app);
    let printedBeforeAnswer: string[] = [];
    h.fake.script(call("get_current_time"), call("read_file", { path: "nope.txt" }), () => {
      printedBeforeAnswer = terminal.lines();
      return text("written");
    });
    terminal.type("write a file");
    await terminal.until("Koroku: written");

    const toolLines = ["✓ get_current_time {}", '✗ read_file {"path":"nope.txt"}'];
    expect(printedBeforeAnswer).toEqual([BANNER, ...toolLines]);
    expect(terminal.lines()).toEqual([BANNER, ...toolLines, "Koroku: written"]);
    terminal.end();
    await terminal.done;
  });

  it("announces a compaction that happens during a turn", async () => {
    h = await startHarness({ env: { COMPACTION_MAX_EVENTS: "4" } });
    h.fake.scriptFor(SUMMARY_MODEL, text("They said hello twice."));
    await h.app.agent.runTurn("local", { text: "hello" });
    await h.app.agent.runTurn("local", { text: "hello again" });
    const terminal = openTerminal(h.app);
    terminal.type("third");
    // The replayed history already holds "Koroku: ok" lines: wait for the ones after the banner.
    const line = "🧠 Compacted 4 earlier messages into a summary";
    const afterBanner = () => terminal.lines().slice(terminal.lines().indexOf(BANNER) + 1);
    await vi.waitFor(() => expect(afterBanner()).toEqual([line, "Koroku: ok"]), {
      timeout: 30_000,
    });

    const [summary] = (await h.app.store.lastTurns("local", 10)).filter(
      (e) => e.kind === "compaction",
    );
    expect(summary?.kind === "compaction" && summary.event.summarized_events).toBe(4);
    terminal.end();
    await terminal.done;
  });

  it("`clear` wipes only this chat's history", async () => {
    h = await startHarness();
    await h.app.agent.runTurn("local", { text: "remember this" });
    await h.app.agent.runTurn("other", { text: "keep this" });
    const terminal = openTerminal(h.app);
    terminal.type("clear");
    await terminal.until("History cleared (2 events removed); the memory files are kept.");

    expect(await h.app.store.lastTurns("local", 50)).toEqual([]);
    expect(await h.app.store.lastTurns("other", 50)).toHaveLength(2);
    terminal.end();
    await terminal.done;
  });

  it("`exit` ends the chat without waiting for the end of the input or running later lines", async () => {
    h = await startHarness();
    const terminal = openTerminal(h.app);
    terminal.type("exit", "this is never sent");
    await terminal.done;

    expect(terminal.lines()).toEqual([BANNER]);
    expect(h.fake.requests).toEqual([]);
  });

  it("prints Gemini's user message when a turn fails and keeps going", async () => {
    h = await startHarness();
    h.fake.script(status(400, "Unsupported language."), text("recovered"));
    const terminal = openTerminal(h.app);
    terminal.type("first");
    await terminal.until("✗ Gemini refused the request: Unsupported language.");
    terminal.type("second");
    await terminal.until("Koroku: recovered");
    terminal.end();
    await terminal.done;

    expect(terminal.lines()).toEqual([
      BANNER,
      "✗ Gemini refused the request: Unsupported language.",
      "Koroku: recovered",
    ]);
  });

  it("shows no configured secret in what it prints", async () => {
    h = await startHarness({ env: { TELEGRAM_BOT_TOKEN: "123456:terminal-secret-token-value" } });
    h.fake.script(status(400, "echoing 123456:terminal-secret-token-value and test-key"));
    const terminal = openTerminal(h.app);
    terminal.type("first");
    await vi.waitFor(
      () =>
        expect(terminal.lines().some((l) => l.includes("echoing [REDACTED] and [redacted]"))).toBe(
          true,
        ),
      { timeout: 30_000 },
    );
    terminal.end();
    await terminal.done;
    expect(terminal.lines().join("\n")).not.toContain("terminal-secret-token-value");
  });

  it("reports any other failure briefly, logs it, and keeps going", async () => {
    h = await startHarness();
    h.fake.script(text("still here"));
    const broken: App = {
      ...h.app,
      store: {
        ...h.app.store,
        clear: () => Promise.reject(new Error("disk I/O error")),
      },
    };
    const terminal = openTerminal(broken);
    terminal.type("clear", "hello");
    terminal.end();
    await terminal.done;

    expect(terminal.lines()).toEqual([
      BANNER,
      "✗ Something went wrong: disk I/O error. Try again (LOG_LEVEL=debug shows the details).",
      "Koroku: still here",
    ]);
    expect(h.logs.some((l) => l.msg === "terminal chat line failed")).toBe(true);
  });

  it("prints the answer's lines as they are written, rendered", async () => {
    h = await startHarness();
    h.fake.script(
      streamed(text("**First** line\n- a point\nthe end"), { chunkChars: 4, chunkDelayMs: 60 }),
    );
    const terminal = openTerminal(h.app);
    terminal.type("tell me");
    await terminal.until("Koroku: First line");
    // Printed while the model still writes.
    expect(h.fake.requests[0]?.streamEndedAt).toBeUndefined();
    await terminal.until("the end");
    expect(terminal.lines()).toEqual([BANNER, "Koroku: First line", "• a point", "the end"]);
    terminal.end();
    await terminal.done;
  });

  it("Ctrl-C stops the answer, keeps what was typed meanwhile, and a second one quits", async () => {
    h = await startHarness();
    h.fake.script(streamed(text("word ".repeat(200)), { chunkChars: 5, chunkDelayMs: 20 }));
    h.fake.script(text("the next answer"));
    const terminal = openTerminal(h.app, true);
    terminal.type("write a lot");
    await vi.waitFor(() => expect(terminal.shown()).toContain("Koroku: word word"), {
      timeout: 30_000,
    });
    terminal.type("what next?");
    terminal.type("\x03");
    await vi.waitFor(() => expect(h.fake.requests).toHaveLength(2), { timeout: 30_000 });
    expect(terminal.lines()).toContain("(stopped)");
    expect(JSON.stringify(h.fake.requests[1]?.body.contents)).toContain("what next?");
    const stored = (await h.app.store.loadContext("local")).events.map((e) => e.event);
    expect(stored[1]).toMatchObject({ role: "model", stopped: true });
    await vi.waitFor(() => expect(terminal.lines().join("\n")).toContain("the next answer"), {
      timeout: 30_000,
    });
    terminal.type("\x03");
    await terminal.done;
  });

  it("says Koroku is thinking while the model has not written, and clears that when it writes", async () => {
    h = await startHarness();
    const terminal = openTerminal(h.app, true);
    let whileThinking = "";
    h.fake.script(() => {
      whileThinking = terminal.shown();
      return text("Here it is");
    });
    terminal.type("hello");
    await vi.waitFor(() => expect(terminal.shown()).toContain("Koroku: Here it is"), {
      timeout: 30_000,
    });
    expect(whileThinking.endsWith("Koroku is thinking…")).toBe(true);
    // Erased (back to the line's start, cleared to the end) before the answer is printed there.
    expect(terminal.raw().replace(STYLES, "")).toContain(
      "Koroku is thinking…\r\x1b[JKoroku: Here it is",
    );
    terminal.end();
    await terminal.done;
  });

  it("a second Ctrl-C while the stopped answer is still being written quits", async () => {
    h = await startHarness();
    h.fake.script(streamed(text("word ".repeat(200)), { chunkChars: 5, chunkDelayMs: 20 }));
    const terminal = openTerminal(h.app, true);
    let quit = false;
    void terminal.done.then(() => {
      quit = true;
    });
    terminal.type("write a lot");
    await vi.waitFor(() => expect(terminal.shown()).toContain("Koroku: word word"), {
      timeout: 30_000,
    });
    terminal.type("\x03\x03");
    await vi.waitFor(() => expect(quit).toBe(true), { timeout: 30_000 });
    expect(terminal.lines()).toContain("(stopped)");
    const stored = (await h.app.store.loadContext("local")).events.map((e) => e.event);
    expect(stored[1]).toMatchObject({ role: "model", stopped: true });
    expect(h.fake.requests).toHaveLength(1);
  });

  it("a failed turn is one readable line; its details, readable too, only at LOG_LEVEL=debug", async () => {
    const logged: string[] = [];
    const logger = createLogger({
      level: TERMINAL_LOG_LEVEL,
      secrets: [],
      destination: readableLogLines((line) => logged.push(line)),
    });
    h = await startHarness({ logger });
    // Every attempt fails, so the turn fails after its retries.
    h.fake.setDefault(status(503, "The model is overloaded."));
    const terminal = openTerminal(h.app);
    terminal.type("first");
    await vi.waitFor(() => expect(terminal.lines()).toHaveLength(2), { timeout: 30_000 });
    const [failure] = terminal.lines().slice(1);
    expect(failure).toMatch(/^✗ \S/);
    expect(logged).toEqual([]);
    expect(h.fake.requests.length).toBeGreaterThan(1);

    logger.level = "debug";
    terminal.type("second");
    await vi.waitFor(() => expect(terminal.lines()).toEqual([BANNER, failure, failure]), {
      timeout: 30_000,
    });
    terminal.end();
    await terminal.done;
    expect(logged.every((line) => /^(debug|info|warn|error): [^{]*\n$/.test(line))).toBe(true);
    // The reason docs/streaming.md promises, as the logger scrubbed it.
    expect(logged).toContain("warn: Gemini call failed; retrying: The model is overloaded.\n");
    expect(logged.at(-1)).toMatch(/^debug: terminal chat line failed: \S/);
  });

  it("takes /clear and /history as commands, as Telegram does, and sends neither to the model", async () => {
    h = await startHarness();
    h.fake.script(text("first answer"), text("second answer"));
    await h.app.agent.runTurn("local", { text: "one" });
    await h.app.agent.runTurn("local", { text: "two" });
    const terminal = openTerminal(h.app);
    terminal.type("/history 1", "history", "/history 0", "/status", "/clear", "/history");
    terminal.end();
    await terminal.done;

    const replay = ["You: one", "Koroku: first answer", "You: two", "Koroku: second answer"];
    expect(terminal.lines()).toEqual([
      ...replay,
      BANNER,
      "You: two",
      "Koroku: second answer",
      ...replay,
      "Usage: history [n], where n is a number of turns from 1 to 100 (default 10).",
      "/status is not a command here: the terminal knows clear, history [n], tools and exit.",
      "History cleared (4 events removed); the memory files are kept.",
      "No conversation yet.",
    ]);
    expect(h.fake.requests).toHaveLength(2);
  });

  it("sends a line that only starts like a command to the model", async () => {
    h = await startHarness();
    h.fake.script(text("a path"), text("a table"));
    const terminal = openTerminal(h.app);
    terminal.type("/etc/hosts is what?", "clear the table");
    terminal.end();
    await terminal.done;
    expect(terminal.lines()).toEqual([BANNER, "Koroku: a path", "Koroku: a table"]);
    expect(h.fake.requests).toHaveLength(2);
  });

  it("replays answers rendered as they were shown, with the mark of a stopped one", async () => {
    h = await startHarness();
    h.fake.script(text("**Bold** start\n- a point"));
    await h.app.agent.runTurn("local", { text: "render this" });
    const stop = new AbortController();
    h.fake.script(streamed(text("word ".repeat(200)), { chunkChars: 5, chunkDelayMs: 20 }));
    await h.app.agent.runTurn("local", {
      text: "write a lot",
      stop: stop.signal,
      progress: { text: () => stop.abort(), restart: () => {}, tool: () => {} },
    });
    const terminal = openTerminal(h.app);
    terminal.end();
    await terminal.done;

    const [stopped] = (await h.app.store.lastTurns("local", 1)).filter(
      (e) => e.kind === "session" && e.event.role === "model",
    );
    const written = stopped?.kind === "session" ? stopped.event.parts : [];
    expect(written).toEqual([{ kind: "text", text: expect.stringMatching(/^word/) }]);
    expect(terminal.lines()).toEqual([
      "You: render this",
      "Koroku: Bold start",
      "• a point",
      "You: write a lot",
      `Koroku: ${written[0]?.kind === "text" ? written[0].text.trim() : ""}`,
      "(stopped)",
      BANNER,
    ]);
  });

  it("names the cause and the address when Gemini cannot be reached", async () => {
    const port = await refusingPort();
    h = await startHarness({ env: { GEMINI_BASE_URL: `http://127.0.0.1:${port}` } });
    const terminal = openTerminal(h.app);
    terminal.type("hello");
    terminal.end();
    await terminal.done;
    expect(terminal.lines()).toEqual([
      BANNER,
      `✗ Gemini is unavailable (connection refused), try again in a minute. (could not reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${port}))`,
    ]);
  });

  it("a pty that reports 0 columns is taken as 80 wide, not as infinitely many rows", async () => {
    h = await startHarness();
    h.fake.script(streamed(text("x".repeat(100)), { chunkChars: 10 }));
    const input = new PassThrough();
    const output = Object.assign(new PassThrough(), { columns: 0 });
    let printed = "";
    output.on("data", (chunk: Buffer) => {
      printed += chunk.toString("utf8");
    });
    const done = runTerminalChat({ app: h.app, input, output, terminal: true });
    input.write("long line\n");
    await vi.waitFor(() => expect(printed).toContain(`Koroku: ${"x".repeat(100)}\n`), {
      timeout: 30_000,
    });
    input.end();
    await done;
    expect(printed).not.toContain("Infinity");
    // The partial line "Koroku: " and 90 x's takes two rows of 80: erased by going one row up.
    expect(printed).toContain("\r\x1b[1A\x1b[J");
  });
});

describe("terminal chat: a tool whose policy is ask", () => {
  let h: Harness;
  afterEach(async () => {
    expect(h.fake.rejections).toEqual([]);
    await h.close();
  });
  /** What the model was last told a call returned. */
  const lastResponse = () =>
    h.fake.requests.at(-1)?.body.contents.at(-1)?.parts?.[0]?.functionResponse?.response;
  const written = (name: string) => join(h.workspaceOf("local"), name);
  /** What the terminal shows for write_file("a.txt", "A"), up to the question. */
  const ASKED_TO_WRITE_A = [
    "🔐 Koroku wants to run write_file:",
    "{",
    '  "path": "a.txt",',
    '  "content": "A"',
    "}",
    APPROVAL_QUESTION,
  ];

  it("shows the call, runs it once on y, and asks again the next time", async () => {
    h = await startHarness();
    h.fake.script(call("write_file", { path: "a.txt", content: "A" }), text("written"));
    const terminal = openTerminal(h.app);
    // As a pipe gives them: the line after the message answers the question it brings.
    terminal.type("write a file", "y");
    await terminal.until("Koroku: written");
    expect(terminal.lines()).toEqual([
      BANNER,
      ...ASKED_TO_WRITE_A,
      "✅ Allowed once",
      '✓ write_file {"path":"a.txt","content":"A"}',
      "Koroku: written",
    ]);
    expect(readFileSync(written("a.txt"), "utf8")).toBe("A");

    h.fake.script(call("write_file", { path: "b.txt", content: "B" }), text("asked again"));
    terminal.type("another one", "y");
    await terminal.until("Koroku: asked again");
    expect(terminal.lines().filter((l) => l === APPROVAL_QUESTION)).toHaveLength(2);
    terminal.end();
    await terminal.done;
  });

  it("takes anything but y or a as a no, and cuts long arguments as Telegram does", async () => {
    h = await startHarness();
    const content = "x".repeat(3_000);
    h.fake.script(call("write_file", { path: "long.txt", content }), text("left it"));
    const terminal = openTerminal(h.app);
    terminal.type("write a long file", "sure, why not");
    await terminal.until("Koroku: left it");
    expect(terminal.lines()).toContain("🚫 Denied");
    const lines = terminal.lines();
    const shown = lines.slice(lines.indexOf("{"), lines.indexOf(APPROVAL_QUESTION)).join("\n");
    expect(shown.startsWith('{\n  "path": "long.txt",\n  "content": "xxx')).toBe(true);
    expect(shown).toHaveLength(1_200 + "…".length);
    expect(shown.endsWith("x…")).toBe(true);
    expect(lastResponse()).toEqual({ error: USER_DECLINED });
    expect(existsSync(written("long.txt"))).toBe(false);
    terminal.end();
    await terminal.done;
  });

  it("takes the end of the input while it asks as a no", async () => {
    h = await startHarness();
    h.fake.script(call("write_file", { path: "a.txt", content: "A" }), text("fine"));
    const terminal = openTerminal(h.app);
    terminal.type("write a file");
    terminal.end();
    await terminal.done;
    expect(terminal.lines().slice(-2)).toEqual(["🚫 Denied", "Koroku: fine"]);
    expect(lastResponse()).toEqual({ error: USER_DECLINED });
  });

  it("remembers always for the terminal's scope, and for no Telegram chat", async () => {
    h = await startHarness();
    h.fake.script(
      call("write_file", { path: "a.txt", content: "A" }),
      text("first"),
      call("write_file", { path: "b.txt", content: "B" }),
      text("second"),
    );
    const terminal = openTerminal(h.app);
    terminal.type("write a", "a");
    await terminal.until("Koroku: first");
    terminal.type("write b");
    await terminal.until("Koroku: second");
    expect(terminal.lines()).toContain("✅ Always allowed here");
    expect(terminal.lines().filter((l) => l === APPROVAL_QUESTION)).toHaveLength(1);
    terminal.type("tools");
    await terminal.until("tools revoke <tool> asks again.");
    expect(terminal.lines().slice(-5)).toEqual([
      "No MCP servers are set up (MCP_CONFIG names none).",
      "",
      "Always allowed here",
      "• write_file",
      "tools revoke <tool> asks again.",
    ]);
    expect(readFileSync(written("b.txt"), "utf8")).toBe("B");
    const { store } = h.app.approvals;
    expect((await store.grants(scopeName({ kind: "terminal" }))).map((g) => g.tool)).toEqual([
      "write_file",
    ]);
    expect(await store.hasGrant(scopeName(scopeOfKey("42")), "write_file")).toBe(false);
  });

  it("`tools revoke <tool>` takes an always back: the tool asks again", async () => {
    h = await startHarness();
    await h.app.approvals.store.grant(scopeName({ kind: "terminal" }), "write_file", undefined);
    h.fake.script(call("write_file", { path: "a.txt", content: "A" }), text("asked"));
    const terminal = openTerminal(h.app);
    terminal.type("/tools oops", "tools revoke read_file", "tools revoke write_file");
    await terminal.until("Revoked: write_file asks again from now on.");
    terminal.type("tools", "write a", "n");
    await terminal.until("Koroku: asked");
    terminal.end();
    await terminal.done;
    expect(terminal.lines()).toEqual([
      BANNER,
      TOOLS_USAGE,
      "read_file is not always allowed here.",
      "Revoked: write_file asks again from now on.",
      "No MCP servers are set up (MCP_CONFIG names none).",
      "",
      "No tool is always allowed here: each call of a tool that asks waits for your yes.",
      ...ASKED_TO_WRITE_A,
      "🚫 Denied",
      "Koroku: asked",
    ]);
  });

  it("Ctrl-C while it asks stops the answer, and the call does not run", async () => {
    h = await startHarness();
    h.fake.script(call("write_file", { path: "a.txt", content: "A" }), text("never asked for"));
    const terminal = openTerminal(h.app, true);
    terminal.type("write a file");
    await vi.waitFor(() => expect(terminal.shown()).toContain(`${APPROVAL_QUESTION}: `), {
      timeout: 30_000,
    });
    terminal.type("\x03");
    await terminal.until("(stopped)");
    expect(h.fake.requests).toHaveLength(1);
    expect(existsSync(written("a.txt"))).toBe(false);
    const stored = (await h.app.store.loadContext("local")).events.map((e) => e.event);
    expect(JSON.stringify(stored.at(-2))).toContain(STOPPED_CALL);
    terminal.end();
    await terminal.done;
  });
});
