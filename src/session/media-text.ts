import { cleanFileName } from "../media/file-name.js";
import type { MediaKind, MediaPart } from "./events.js";

const ICONS: Record<MediaKind, string> = {
  photo: "📷",
  voice: "🎤",
  audio: "🎵",
  video: "🎬",
  video_note: "📹",
  animation: "🎞",
  document: "📄",
  sticker: "🖼",
};

const NAMES: Record<MediaKind, string> = {
  photo: "photo",
  voice: "voice note",
  audio: "audio",
  video: "video",
  video_note: "video note",
  animation: "animation",
  document: "document",
  sticker: "sticker",
};

/** 75 → "1:15", 3723 → "1:02:03". */
export function clockTime(seconds: number): string {
  const s = Math.round(seconds);
  const two = (n: number) => String(n).padStart(2, "0");
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  return hours > 0 ? `${hours}:${two(minutes)}:${two(s % 60)}` : `${minutes}:${two(s % 60)}`;
}

/** "1.2 MB", "340 KB", "12 bytes". */
export function byteSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} byte${bytes === 1 ? "" : "s"}`;
}

/**
 * A part's name as shown and told: cleaned when it was stored, and again here for parts stored
 * before names were (the cleaning leaves a clean name as it is).
 */
const nameOf = (part: MediaPart) => cleanFileName(part.name);

/** What a media part is, in a few words: "voice note 0:12", "document report.pdf". */
export function mediaTitle(part: MediaPart): string {
  const words: string[] = [NAMES[part.media]];
  const name = nameOf(part);
  if (name && part.media !== "photo") words.push(name);
  if (part.duration !== undefined) words.push(clockTime(part.duration));
  return words.join(" ");
}

/** The /history line: `🎤 0:12 «…transcript…»`, `📷 photo «caption»`, `📄 report.pdf`. */
export function mediaLine(part: MediaPart, caption?: string): string {
  const name = part.media === "document" ? nameOf(part) : undefined;
  const head =
    part.media === "voice" && part.duration !== undefined
      ? clockTime(part.duration)
      : (name ?? mediaTitle(part));
  const quoted = part.transcript ?? caption;
  return `${ICONS[part.media]} ${head}${quoted ? ` «${quoted}»` : ""}`;
}

/**
 * Words for a media part whose bytes a request does not carry (the summary model's transcript,
 * media past the request's inline budget): what it was, and what was said in it.
 */
export function mediaNote(part: MediaPart): { text: string } {
  const said = part.transcript ? `: «${part.transcript}»` : "";
  return { text: `[${mediaTitle(part)}, ${part.mimeType}, ${byteSize(part.size)}${said}]` };
}

/** What search_history matches in a media part: its kind, its name and what was said in it. */
export function mediaSearchText(part: MediaPart): string {
  return [NAMES[part.media], part.name, part.transcript].filter(Boolean).join(" ");
}

// Gemini's documented costs: an image 1,120 tokens at the default resolution, audio 32 tokens a
// second, video about 300 a second (a frame a second plus its sound), a PDF page 258.
const IMAGE_TOKENS = 1_120;
const AUDIO_TOKENS_PER_SECOND = 32;
const VIDEO_TOKENS_PER_SECOND = 300;
const PDF_BYTES_PER_PAGE = 50_000;
const PDF_TOKENS_PER_PAGE = 258;
const UNKNOWN_DURATION_SECONDS = 10;

/** Rough prompt tokens a media part costs, for the compaction budget between two measurements. */
export function mediaTokens(part: MediaPart): number {
  const seconds = part.duration ?? UNKNOWN_DURATION_SECONDS;
  if (part.mimeType.startsWith("image/")) return IMAGE_TOKENS;
  if (part.mimeType.startsWith("audio/")) return Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND);
  if (part.mimeType.startsWith("video/")) return Math.ceil(seconds * VIDEO_TOKENS_PER_SECOND);
  if (part.mimeType === "application/pdf")
    return Math.ceil(part.size / PDF_BYTES_PER_PAGE) * PDF_TOKENS_PER_PAGE;
  return Math.ceil(part.size / 4);
}
