import type { AgentHooks } from "../agent/hooks.js";
import type { ModelClient } from "../agent/model-client.js";
import type { VoiceEncoder } from "./encoder-pool.js";
import { type EncodedVoice, TTS_SAMPLE_RATE } from "./ogg-opus.js";

/** Gemini's speech came back without audio (a refusal, an empty answer): the reason, in words. */
export class SpeechFailedError extends Error {
  constructor(reason: string) {
    super(`Gemini gave no speech (${reason})`);
    this.name = "SpeechFailedError";
  }
}

/** `audio/L16;codec=pcm;rate=24000` → 24000; undefined when it is not raw 16-bit PCM. */
export function pcmRateOf(mimeType: string | undefined): number | undefined {
  const [type, ...params] = (mimeType ?? "").split(";").map((s) => s.trim().toLowerCase());
  if (type !== "audio/l16" && type !== "audio/pcm") return undefined;
  const rate = params.find((p) => p.startsWith("rate="))?.slice(5);
  return rate === undefined ? TTS_SAMPLE_RATE : Number(rate);
}

export type Speaker = {
  /**
   * `text` spoken by GEMINI_TTS_MODEL in GEMINI_VOICE, as an Ogg Opus voice note; undefined when
   * `stop` ended it. The call is counted for `chatId`'s /usage.
   */
  speak(chatId: string, text: string, stop?: AbortSignal): Promise<EncodedVoice | undefined>;
};

/**
 * Speech through the same client as every other Gemini call (its retries, its shared 429
 * limit), streamed: Gemini sends the PCM in pieces, and the client's deadline is per piece, so a
 * long part is not cut off while it keeps coming. Encoding waits for the whole part, and runs on
 * the encoder's threads (15–20 ms of CPU per second of speech, docs/decisions/0008-voice-encoder.md).
 */
export function createSpeaker(deps: {
  model: ModelClient;
  hooks: AgentHooks;
  encoder: Pick<VoiceEncoder, "encode">;
  settings: { model: string; voice: string };
}): Speaker {
  return {
    async speak(chatId, text, stop) {
      const result = await deps.model.generate({
        model: deps.settings.model,
        contents: [{ role: "user", parts: [{ text }] }],
        output: { kind: "speech", voice: deps.settings.voice },
        // Nothing is drafted from speech.
        stream: { onText: () => {}, onRestart: () => {} },
        ...(stop ? { stop } : {}),
      });
      deps.hooks.emit("modelCall", { chatId, model: deps.settings.model, usage: result.usage });
      if (result.stopped) return undefined;
      const audio = (result.content.parts ?? []).filter((part) => part.inlineData?.data);
      if (audio.length === 0) {
        throw new SpeechFailedError(
          result.blockReason ?? result.finishReason ?? "an answer without audio",
        );
      }
      const pcm = audio.map((part) => {
        const rate = pcmRateOf(part.inlineData?.mimeType);
        if (rate !== TTS_SAMPLE_RATE) {
          throw new SpeechFailedError(
            `audio as ${part.inlineData?.mimeType}, not 16-bit PCM at ${TTS_SAMPLE_RATE} Hz`,
          );
        }
        return Buffer.from(part.inlineData?.data ?? "", "base64");
      });
      return deps.encoder.encode(pcm);
    },
  };
}
