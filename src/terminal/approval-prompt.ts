import type { AskNow } from "../approvals/gate.js";
import { ENDINGS, requestTitle, shownArguments } from "../approvals/request-text.js";
import type { Decision } from "../approvals/store.js";
import type { AnswerPrinter } from "./answer-printer.js";
import type { LineQueue } from "./line-queue.js";

export const APPROVAL_QUESTION = "Allow it? y = once, a = always here, N = no";

const ANSWERS: Readonly<Record<string, Decision>> = {
  y: "allowed",
  yes: "allowed",
  a: "always",
  always: "always",
};

/**
 * Asks the person at the keyboard about a call whose tool asks, as Telegram's buttons do: the
 * tool and its arguments, then a line that answers. Only a yes runs it; anything else, and the
 * end of the input, is a no. A stop (Ctrl-C) while it waits ends the answer.
 */
export function askInTerminal(deps: {
  printer: Pick<AnswerPrinter, "endRound" | "line">;
  lines: LineQueue;
  /** Shows the question where the answer is typed; the returned function takes it away. */
  question(text: string): () => void;
  stop: AbortSignal;
}): AskNow {
  return async (call) => {
    const { printer } = deps;
    printer.endRound();
    printer.line(requestTitle(call.name));
    printer.line(shownArguments(call.args ?? {}));
    const answered = deps.question(APPROVAL_QUESTION);
    const typed = await deps.lines.next(deps.stop).finally(answered);
    if (deps.stop.aborted) return "stop";
    const decision = ANSWERS[typed?.trim().toLowerCase() ?? ""] ?? "denied";
    printer.line(ENDINGS[decision]);
    return decision;
  };
}
