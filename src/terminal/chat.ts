import { createInterface } from "node:readline";
import { compactionNotice } from "../agent/compaction.js";
import { GeminiError } from "../agent/gemini-errors.js";
import type { AgentHookEvents } from "../agent/hooks.js";
import type { App } from "../app.js";
import { argsText, historyLines, historyLineText } from "../session/history-view.js";

export type TerminalChatDeps = {
  app: App;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** The terminal is one conversation; it defaults to `local`, apart from every Telegram chat. */
  chatId?: string;
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

/** Runs one turn, printing tool calls and compactions as they happen, then the answer. */
async function converse(app: App, chatId: string, text: string, say: Say): Promise<void> {
  const unsubscribe = [
    app.hooks.on("toolResult", (event) => {
      if (event.chatId === chatId) say(toolLine(event));
    }),
    app.hooks.on("compaction", (event) => {
      if (event.chatId === chatId) {
        say(compactionNotice(event.summarizedEvents));
      }
    }),
  ];
  try {
    const result = await app.agent.runTurn(chatId, { text });
    say(`Koroku: ${result.text}`);
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
  return `Something went wrong: ${reason}. The details are in the log; try again.`;
}

/**
 * The terminal chat: replays the stored conversation, then turns each line typed into an agent
 * turn until `exit` or the end of the input. A failed line is reported and the chat goes on.
 */
export async function runTerminalChat(deps: TerminalChatDeps): Promise<void> {
  const { app, input, output } = deps;
  const chatId = deps.chatId ?? DEFAULT_CHAT_ID;
  const say: Say = (line) => {
    output.write(`${line}\n`);
  };

  await replayHistory(app, chatId, say);
  say(BANNER);
  // Given the output, readline edits lines and echoes only when it is a terminal; a pipe gets
  // nothing but the conversation.
  const lines = createInterface({ input, output, prompt: "> " });
  const prompt = () => {
    if (lines.terminal) lines.prompt();
  };
  prompt();
  for await (const raw of lines) {
    const line = raw.trim();
    if (line === "exit") break;
    try {
      if (line === "clear") await clearHistory(app, chatId, say);
      else if (line !== "") await converse(app, chatId, line, say);
    } catch (error) {
      app.logger.error({ err: error, chat_id: chatId }, "terminal chat line failed");
      say(failureText(error));
    }
    prompt();
  }
}
