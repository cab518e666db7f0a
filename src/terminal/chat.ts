import { createInterface, type Interface } from "node:readline";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError, GeminiUnavailableError } from "../agent/gemini-errors.js";
import type { AgentHookEvents } from "../agent/hooks.js";
import type { App } from "../app.js";
import type { AskNow } from "../approvals/gate.js";
import { configuredSecrets } from "../config.js";
import { createScrubber } from "../logger.js";
import {
  argsText,
  HISTORY_TURNS_RULE,
  historyLines,
  historyLineText,
  historyTurns,
} from "../session/history-view.js";
import { toolStatus } from "../tools/status.js";
import { type AnswerPrinter, createAnswerPrinter } from "./answer-printer.js";
import { askInTerminal } from "./approval-prompt.js";
import { queueLines } from "./line-queue.js";
import { ANSI_STYLES, PLAIN_STYLES } from "./markdown.js";
import { toolsCommand } from "./tools-command.js";

export type TerminalChatDeps = {
  app: App;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** The terminal is one conversation; it defaults to `local`, apart from every Telegram chat. */
  chatId?: string;
  /** Whether to edit lines, colour, and take Ctrl-C (default: whether `output` is a terminal). */
  terminal?: boolean;
};

type Say = (line: string) => void;

const DEFAULT_CHAT_ID = "local";
const PROMPT = "> ";
const REPLAY_TURNS = 50;
const BANNER =
  "Koroku — type a message; `clear` wipes the history, `history [n]` replays it, `tools` lists the tools, `exit` quits (each with or without a /).";

type Command =
  | { name: "clear" | "exit" }
  | { name: "history"; turns: number | undefined }
  | { name: "tools"; arg: string }
  | { name: "unknown"; word: string };

/**
 * The terminal's own commands, typed bare or, as in Telegram, after a slash. Bare, only the
 * exact command is one ("clear", "history 5", "tools revoke write_file"): "clear the table" is a
 * message. Slashed, any word is a command (not a path like /etc/hosts), and the ones Telegram
 * knows beyond these are not.
 */
function commandOf(line: string): Command | undefined {
  const slashed = /^\/([A-Za-z_]+)(?:\s+(.*))?$/.exec(line);
  const bare =
    /^(clear|history|exit)(?:\s+(\d+))?$/.exec(line) ??
    /^(tools)(?:\s+(revoke\s+\S+))?$/.exec(line);
  const [, word = "", arg = ""] = slashed ?? bare ?? [];
  if (word === "clear" || word === "exit") {
    return slashed || arg === "" ? { name: word } : undefined;
  }
  if (word === "history") return { name: "history", turns: historyTurns(arg) };
  if (word === "tools") return { name: "tools", arg: arg.trim() };
  return slashed ? { name: "unknown", word } : undefined;
}

/**
 * The stored conversation as it was shown: Koroku's answers rendered like live ones, with the
 * mark of an answer that was stopped or cut; the rest as plain lines.
 */
async function replayHistory(
  app: App,
  chatId: string,
  turns: number,
  say: Say,
  printer: AnswerPrinter,
): Promise<number> {
  const lines = historyLines(await app.store.lastTurns(chatId, turns));
  for (const line of lines) {
    if (line.kind === "assistant") printer.finish(line.text, line.mark);
    else say(historyLineText(line));
  }
  return lines.length;
}

function toolLine(event: AgentHookEvents["toolResult"]): string {
  return historyLineText({
    kind: "tool",
    ok: event.ok,
    name: event.name,
    args: argsText(event.args),
  });
}

/**
 * Runs one turn, printing the answer as it is written, tool calls and compactions as they
 * happen. `stop` (Ctrl-C) ends the answer where it is.
 */
async function converse(
  app: App,
  chatId: string,
  text: string,
  printer: AnswerPrinter,
  stop: AbortSignal,
  ask: AskNow,
): Promise<void> {
  const unsubscribe = [
    app.hooks.on("toolResult", (event) => {
      if (event.chatId === chatId) printer.line(toolLine(event));
    }),
    app.hooks.on("compaction", (event) => {
      if (event.chatId === chatId) printer.line(compactionNotice(event.summarizedEvents));
    }),
  ];
  printer.status("Koroku is thinking…");
  try {
    const result = await app.agent.runTurn(chatId, {
      text,
      stop,
      chatType: "terminal",
      ask,
      progress: {
        text: (written) => printer.text(written),
        restart: () => printer.restart(),
        tool: (name, args) => {
          printer.endRound();
          printer.status(toolStatus(name, args));
        },
      },
    });
    printer.finish(result.text, result.stopped ? "(stopped)" : undefined);
  } catch (error) {
    printer.finish("");
    throw error;
  } finally {
    for (const off of unsubscribe) off();
  }
}

async function clearHistory(app: App, chatId: string, say: Say): Promise<void> {
  const removed = await app.store.clear(chatId);
  say(`History cleared (${removed} events removed); the memory files are kept.`);
}

function failureText(error: unknown): string {
  // The terminal's user runs the bot: what failed, and where, is theirs to fix.
  if (error instanceof GeminiUnavailableError) return `${error.userMessage} (${error.reason})`;
  if (error instanceof GeminiError) return error.userMessage;
  const reason = error instanceof Error ? error.message : String(error);
  return `Something went wrong: ${reason}. Try again (LOG_LEVEL=debug shows the details).`;
}

/**
 * Ctrl-C stops the answer being written, or a call waiting for the user's yes; a second one, or
 * one while nothing runs, quits. Lines typed while an answer is written wait for it (queued, see
 * line-queue.ts; readline redraws the one being typed with the prompt).
 */
function onInterrupt(lines: Interface, running: () => AbortController | undefined): void {
  lines.on("SIGINT", () => {
    const turn = running();
    if (turn && !turn.signal.aborted) turn.abort();
    else lines.close();
  });
}

/**
 * The terminal chat: replays the stored conversation, then turns each line typed into an agent
 * turn until `exit` or the end of the input. A failed line is reported and the chat goes on.
 */
export async function runTerminalChat(deps: TerminalChatDeps): Promise<void> {
  const { app, input, output } = deps;
  const chatId = deps.chatId ?? DEFAULT_CHAT_ID;
  const terminal = deps.terminal ?? (output as { isTTY?: boolean }).isTTY === true;
  // Like everything the bot sends to Telegram: a Gemini error that echoes a secret shows none.
  const scrub = createScrubber(configuredSecrets(app.config));
  const say: Say = (line) => {
    output.write(`${scrub(line)}\n`);
  };
  const styles = terminal && process.env.NO_COLOR === undefined ? ANSI_STYLES : PLAIN_STYLES;
  const printer = createAnswerPrinter(
    { write: (text) => output.write(scrub(text)) },
    styles,
    // A width the terminal does not report (or reports as 0) is the printer's default.
    terminal ? ((output as { columns?: number }).columns ?? 0) : undefined,
  );

  await replayHistory(app, chatId, REPLAY_TURNS, say, printer);
  say(BANNER);
  // Given the output, readline edits lines and echoes only when it is a terminal; a pipe gets
  // nothing but the conversation.
  const lines = createInterface({ input, output, prompt: PROMPT, terminal });
  // A second Ctrl-C closes readline while a stopped answer is still being written; Node 22+
  // throws when a closed interface is asked to prompt.
  let closed = false;
  lines.once("close", () => {
    closed = true;
  });
  const prompt = () => {
    if (lines.terminal && !closed) lines.prompt(true);
  };
  const queue = queueLines(lines);
  /** On a terminal the question is the prompt the answer is typed after; elsewhere a line. */
  const question = (text: string) => {
    if (!lines.terminal) {
      printer.line(text);
      return () => {};
    }
    lines.setPrompt(`${text}: `);
    prompt();
    return () => lines.setPrompt(PROMPT);
  };
  let running: AbortController | undefined;
  onInterrupt(lines, () => running);
  prompt();
  for (let raw = await queue.next(); raw !== undefined; raw = await queue.next()) {
    const line = raw.trim();
    const command = commandOf(line);
    if (command?.name === "exit") break;
    try {
      if (command?.name === "clear") await clearHistory(app, chatId, say);
      else if (command?.name === "history") {
        if (command.turns === undefined) say(`Usage: history [n], where ${HISTORY_TURNS_RULE}.`);
        else if ((await replayHistory(app, chatId, command.turns, say, printer)) === 0) {
          say("No conversation yet.");
        }
      } else if (command?.name === "tools") {
        say(await toolsCommand(app, command.arg, styles));
      } else if (command?.name === "unknown") {
        say(
          `/${command.word} is not a command here: the terminal knows clear, history [n], tools and exit.`,
        );
      } else if (line !== "") {
        running = new AbortController();
        const stop = running.signal;
        const ask = askInTerminal({ printer, lines: queue, question, stop });
        await converse(app, chatId, line, printer, stop, ask);
      }
    } catch (error) {
      // One readable line in the chat; the details (a stack) only at LOG_LEVEL=debug.
      app.logger.debug({ err: error, chat_id: chatId }, "terminal chat line failed");
      say(`✗ ${failureText(error)}`);
    } finally {
      running = undefined;
    }
    prompt();
  }
  lines.close();
}
