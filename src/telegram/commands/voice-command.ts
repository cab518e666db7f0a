import { Composer } from "grammy";
import type { Delivery } from "../../answer/delivery.js";
import type { VoiceReplyMode } from "../../config.js";
import { escapeHtml } from "../../render/markdown-html.js";
import type { VoiceSettings } from "../../voice/voice-settings.js";
import type { TurnContext } from "../turn-context.js";

const MODES: Record<string, VoiceReplyMode> = { on: "always", off: "off", auto: "auto" };

const SAID: Record<VoiceReplyMode, string> = {
  always: "Voice replies are on in this conversation: I answer everything with a voice note too.",
  off: "Voice replies are off in this conversation: I answer in text only.",
  auto: "Voice replies are on auto in this conversation: a voice note gets a voice note back, text gets text.",
};

/** /voice on|off|auto: spoken replies in this conversation (a chat, or a topic of it). */
export function voiceComposer(deps: {
  settings: VoiceSettings;
  delivery: Delivery;
}): Composer<TurnContext> {
  const composer = new Composer<TurnContext>();
  composer.command("voice", async (ctx) => {
    const key = ctx.conversation;
    const word = ctx.match.trim().toLowerCase();
    const mode = MODES[word];
    let text: string;
    if (mode !== undefined) {
      await deps.settings.set(key, mode);
      text = SAID[mode];
    } else {
      const now = SAID[await deps.settings.modeOf(key)];
      text =
        word === ""
          ? `${now}\nChange it with /voice on, /voice off or /voice auto.`
          : `/voice takes on, off or auto, not "${word}".\n${now}`;
    }
    await deps.delivery.sendHtml(ctx.chat.id, escapeHtml(text), ctx.thread);
  });
  return composer;
}
