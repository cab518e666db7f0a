import { createInterface, type Interface } from "node:readline";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError } from "../agent/gemini-errors.js";
import type { AgentHookEvents } from "../agent/hooks.js";
import type { App } from "../app.js";
import { configuredSecrets } from "../config.js";
import { createScrubber } from "../logger.js";
import { argsText, historyLines, historyLineText } from "../session/history-view.js";
import { toolStatus } from "../tools/status.js";
import { type AnswerPrinter, createAnswerPrinter } from "./answer-printer.js";
import { ANSI_STYLES, PLAIN_STYLES } from "./markdown.js";

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
const REPLAY_TURNS = 50;
const BANNER = "Koroku — type a message; `clear` wipes the history, `exit` quits.";

async function replayHistory(app: App, chatId: string, say: Say): Promise<void> {
  const events = await app.store.lastTurns(chatId, REPLAY_TURNS);
  for (const line of historyLines(events)) say(historyLineText(line));
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
  if (error instanceof GeminiError) return error.userMessage;
  const reason = error instanceof Error ? error.message : String(error);
  return `Something went wrong: ${reason}. Try again (LOG_LEVEL=debug shows the details).`;
}

/**
 * Ctrl-C stops the answer being written; a second one, or one while nothing runs, quits. Lines
 * typed while an answer is written wait for it (readline keeps them, and redraws the one being
 * typed with the prompt).
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
  const colour = terminal && process.env.NO_COLOR === undefined;
  const printer = createAnswerPrinter(
    output,
    colour ? ANSI_STYLES : PLAIN_STYLES,
    terminal ? ((output as { columns?: number }).columns ?? 80) : undefined,
  );

  await replayHistory(app, chatId, say);
  say(BANNER);
  // Given the output, readline edits lines and echoes only when it is a terminal; a pipe gets
  // nothing but the conversation.
  const lines = createInterface({ input, output, prompt: "> ", terminal });
  const prompt = () => {
    if (lines.terminal) lines.prompt(true);
  };
  let running: AbortController | undefined;
  onInterrupt(lines, () => running);
  prompt();
  for await (const raw of lines) {
    const line = raw.trim();
    if (line === "exit") break;
    try {
      if (line === "clear") await clearHistory(app, chatId, say);
      else if (line !== "") {
        running = new AbortController();
        await converse(app, chatId, line, printer, running.signal);
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
}
