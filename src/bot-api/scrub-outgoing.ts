import type { Transformer } from "grammy";
import { createScrubber } from "../logger.js";

// The one call whose payload must carry a secret: it tells Telegram the webhook's.
const CARRIES_SECRETS = new Set(["setWebhook"]);

function scrubStrings(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === "string") return scrub(value);
  if (Array.isArray(value)) return value.map((item) => scrubStrings(item, scrub));
  // Plain objects only: an InputFile (a file's bytes) is sent as it is.
  if (
    value === null ||
    typeof value !== "object" ||
    Object.getPrototypeOf(value) !== Object.prototype
  )
    return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = scrubStrings(item, scrub);
  return out;
}

/**
 * Takes every configured secret out of everything the bot sends (answers, errors, commands'
 * replies, drafts, captions), as the logs do: a Gemini error or a tool's output that echoes a
 * token must not show it in a chat (in any of the forms createScrubber knows).
 */
export function scrubOutgoing(secrets: readonly string[]): Transformer {
  const scrub = createScrubber(secrets);
  return (prev, method, payload, signal) =>
    prev(
      method,
      CARRIES_SECRETS.has(method) ? payload : (scrubStrings(payload, scrub) as typeof payload),
      signal,
    );
}
