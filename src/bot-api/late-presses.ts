import type { Transformer } from "grammy";

// Telegram's words for a press it stopped waiting on, or one it no longer knows.
const TOO_OLD = /query is too old|query ID is invalid/i;

/**
 * Answering a button press only takes its spinner away; what the press does is done, or refused,
 * by then. A press handled late (a backlog, polling after a restart) can no longer be answered,
 * and failing its update for that would run it again, to find its work done. So that refusal
 * counts as answered.
 */
export const latePressesAnswered: Transformer = async (prev, method, payload, signal) => {
  const result = await prev(method, payload, signal);
  if (method !== "answerCallbackQuery" || result.ok) return result;
  if (result.error_code !== 400 || !TOO_OLD.test(result.description)) return result;
  return { ok: true, result: true } as unknown as typeof result;
};
