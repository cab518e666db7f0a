import type { GoogleGenAI } from "@google/genai";
import { lazyGenAi } from "../agent/genai-sdk.js";
import type { Logger } from "../logger.js";
import { StartupError } from "../startup-error.js";

/** Pages of Gemini's voice list read at most (1,000 voices a page; the catalogue holds 30). */
const MAX_PAGES = 5;

/** How long the voice list may take at start before the check is skipped. */
const LIST_TIMEOUT_MS = 10_000;

/** The names of Gemini's prebuilt voices, from its voice list (`GET /v1/voices`). */
export async function prebuiltVoices(ai: GoogleGenAI): Promise<string[]> {
  const names: string[] = [];
  let pageToken: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const reply = await ai.voices.list(
      { type: ["prebuilt"], page_size: 1000, ...(pageToken ? { page_token: pageToken } : {}) },
      { timeout_ms: LIST_TIMEOUT_MS },
    );
    for (const voice of reply.voices ?? []) if (voice.id) names.push(voice.id);
    pageToken = reply.next_page_token || undefined;
    if (pageToken === undefined) break;
  }
  return names;
}

/** Throws the start-up error that names the voices there are when `voice` is not one of them. */
export function checkVoiceIn(voice: string, voices: readonly string[]): void {
  if (voices.includes(voice)) return;
  const near = voices.find((name) => name.toLowerCase() === voice.toLowerCase());
  const hint = near ? ` (names are spelt as listed: "${near}")` : "";
  const known = [...voices].sort().join(", ");
  throw new StartupError(
    `GEMINI_VOICE "${voice}" is not one of Gemini's prebuilt voices${hint}. Set it to one of: ${known}.`,
  );
}

/**
 * Checks GEMINI_VOICE against Gemini's voice list at start. A list that cannot be read (Gemini
 * away, a proxy without the endpoint) is no reason to refuse to start: the check is skipped, and
 * said so in the log; a voice Gemini does not have then fails each voice reply, told in the chat.
 */
export async function checkVoiceAtStart(deps: {
  apiKey: string;
  baseUrl: string | undefined;
  voice: string;
  logger: Logger;
}): Promise<void> {
  const sdk = lazyGenAi({ apiKey: deps.apiKey, baseUrl: deps.baseUrl, fetch });
  let voices: string[];
  try {
    voices = await prebuiltVoices((await sdk()).ai);
  } catch (error) {
    deps.logger.warn(
      { err: error, voice: deps.voice },
      "could not read Gemini's voice list; GEMINI_VOICE is not checked",
    );
    return;
  }
  if (voices.length === 0) {
    deps.logger.warn(
      { voice: deps.voice },
      "Gemini's voice list is empty; GEMINI_VOICE is not checked",
    );
    return;
  }
  checkVoiceIn(deps.voice, voices);
}
