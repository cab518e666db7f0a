/**
 * The fake Gemini's speech and image models, as the real API answers them: the prebuilt voice
 * list (`GET /v1/voices`), TTS models that answer text with 16-bit PCM at 24 kHz streamed in
 * pieces (`audio/L16;codec=pcm;rate=24000`), and image models that answer with an inline PNG,
 * change a picture the request carries, and refuse a prompt for safety (IMAGE_SAFETY).
 */
import { createHash } from "node:crypto";
import type { Part } from "@google/genai";
import { pngImage } from "../helpers/images.js";
import type { GenerateBody, RecordedRequest, ReplyStep } from "./gemini-steps.js";

/** The prebuilt voices of Gemini's speech models, as its documentation lists them. */
export const PREBUILT_VOICES = [
  "Zephyr",
  "Puck",
  "Charon",
  "Kore",
  "Fenrir",
  "Leda",
  "Orus",
  "Aoede",
  "Callirrhoe",
  "Autonoe",
  "Enceladus",
  "Iapetus",
  "Umbriel",
  "Algieba",
  "Despina",
  "Erinome",
  "Algenib",
  "Rasalgethi",
  "Laomedeia",
  "Achernar",
  "Alnilam",
  "Schedar",
  "Gacrux",
  "Pulcherrima",
  "Achird",
  "Zubenelgenubi",
  "Vindemiatrix",
  "Sadachbia",
  "Sadaltager",
  "Sulafat",
] as const;

/** The answer to `GET /v1/voices?type=prebuilt`: one page, as Gemini sends the catalogue. */
export function voiceList(): { voices: Record<string, string>[] } {
  return {
    voices: PREBUILT_VOICES.map((id) => ({ id, display_name: id, type: "prebuilt" })),
  };
}

export const PCM_MIME_TYPE = "audio/L16;codec=pcm;rate=24000";
const RATE = 24_000;
/** Seconds of speech per character of text: a third of how long Gemini takes to read it, to keep tests quick. */
export const SECONDS_PER_CHAR = 0.02;
/** Seconds of audio per streamed piece. */
const PIECE_SECONDS = 0.5;
/** Gemini counts 25 audio tokens a second. */
const AUDIO_TOKENS_PER_SECOND = 25;

/** Words that make the fake image model refuse a prompt for safety. */
export const REFUSED_PROMPT_WORD = "forbidden";

const modalitiesOf = (body: GenerateBody): string[] => {
  const value = body.generationConfig?.responseModalities;
  return Array.isArray(value) ? value.map(String) : [];
};

export const isSpeechModel = (model: string): boolean => /-tts$/.test(model);
// Gemini's image models: "…-image" ids up to 3.1, "nano-banana" ids since.
export const isImageModel = (model: string): boolean =>
  /-image(-preview)?$|nano-banana/.test(model);

const textOf = (body: GenerateBody): string =>
  body.contents
    .flatMap((content) => content.parts ?? [])
    .map((part) => part.text ?? "")
    .join("");

/**
 * What the real API says of a request its model's output cannot serve, or undefined: audio only
 * from a TTS model and always with a prebuilt voice; a TTS model only speaks; images only from
 * an image model.
 */
export function outputProblem(model: string, body: GenerateBody): string | undefined {
  const modalities = modalitiesOf(body);
  if (isSpeechModel(model)) {
    if (!modalities.includes("AUDIO") || modalities.length !== 1) {
      return "The requested combination of response modalities is not supported by the model.";
    }
    const speech = body.generationConfig?.speechConfig as
      | { voiceConfig?: { prebuiltVoiceConfig?: { voiceName?: string } } }
      | undefined;
    const voice = speech?.voiceConfig?.prebuiltVoiceConfig?.voiceName;
    if (voice === undefined || !(PREBUILT_VOICES as readonly string[]).includes(voice)) {
      return `Voice ${voice ?? "(none)"} is not supported.`;
    }
    if ((body.tools ?? []).length > 0) return "Function calling is not enabled for this model.";
    if (textOf(body).trim() === "") return "Contents must hold text to speak.";
    return undefined;
  }
  if (modalities.includes("AUDIO")) {
    return "Model does not support the requested response modality: AUDIO";
  }
  if (modalities.includes("IMAGE") && !isImageModel(model)) {
    return "Model does not support the requested response modality: IMAGE";
  }
  return undefined;
}

/** A voice-like tone of `seconds`, as 16-bit little-endian PCM at 24 kHz. */
function speechPcm(seconds: number): Buffer {
  const samples = Math.max(1, Math.round(seconds * RATE));
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    const t = i / RATE;
    const pitch = 140 + 40 * Math.sin(2 * Math.PI * 3 * t);
    pcm.writeInt16LE(Math.round(6_000 * Math.sin(2 * Math.PI * pitch * t)), i * 2);
  }
  return pcm;
}

/**
 * The speech of the request's text: its PCM in pieces, one part each, streamed a piece a chunk;
 * `secondsPerChar` of speech for each character of it.
 */
export function speechStep(request: RecordedRequest, secondsPerChar = SECONDS_PER_CHAR): ReplyStep {
  const seconds = textOf(request.body).length * secondsPerChar;
  const pcm = speechPcm(seconds);
  const pieceBytes = PIECE_SECONDS * RATE * 2;
  const parts: Part[] = [];
  for (let at = 0; at < pcm.byteLength; at += pieceBytes) {
    const data = pcm.subarray(at, at + pieceBytes).toString("base64");
    parts.push({ inlineData: { mimeType: PCM_MIME_TYPE, data } });
  }
  return {
    kind: "reply",
    parts,
    usage: { candidatesTokenCount: Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND) },
  };
}

/**
 * A picture for the request: a PNG whose size and bytes follow from the prompt and, for an edit,
 * from the picture it changes (so the result differs from it); a prompt with the refused word is
 * turned down for safety, as Gemini does, without an image.
 */
export function imageStep(request: RecordedRequest): ReplyStep {
  const prompt = textOf(request.body);
  if (prompt.toLowerCase().includes(REFUSED_PROMPT_WORD)) {
    return { kind: "reply", parts: [], finishReason: "IMAGE_SAFETY" };
  }
  const given = request.body.contents
    .flatMap((content) => content.parts ?? [])
    .filter((part) => part.inlineData?.mimeType?.startsWith("image/"));
  const seed = createHash("sha256")
    .update(prompt)
    .update(given.map((part) => part.inlineData?.data ?? "").join(""))
    .digest();
  const side = 64 + ((seed[0] as number) % 64);
  const png = pngImage(side, side, 300 + ((seed[1] as number) % 200));
  const words = given.length > 0 ? "Here is the changed picture." : "Here is the picture.";
  return {
    kind: "reply",
    parts: [
      { text: words },
      { inlineData: { mimeType: "image/png", data: png.toString("base64") } },
    ],
    usage: { candidatesTokenCount: 1_120 },
  };
}
