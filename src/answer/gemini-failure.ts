import { type GeminiError, GeminiRefusedError } from "../agent/gemini-errors.js";

/**
 * What the chat is told when Gemini failed: Gemini's own words, and what the user can do. A
 * message whose content Gemini refused is set aside (the turn keeps stand-ins for it); any other
 * 400 may come back with every later turn.
 */
export function geminiFailureText(error: GeminiError): string {
  if (error instanceof GeminiRefusedError && error.inputRefused) {
    return `${error.userMessage}\nI have set that message aside, so your next messages are answered without it. A file Gemini cannot read may go through in another form (a screenshot, a PDF export).`;
  }
  if (error.status === 400) {
    return `${error.userMessage}\nIf this keeps happening, /clear starts this chat afresh (the memory files stay).`;
  }
  if (error.status === 401 || error.status === 403) {
    return `${error.userMessage}\nThe bot's Gemini API key may be wrong or lack access: please tell whoever runs the bot.`;
  }
  return error.userMessage;
}
