import type { Message, PhotoSize } from "grammy/types";
import { cleanFileName } from "../../media/file-name.js";
import type { MediaKind } from "../../session/events.js";
import { clockTime } from "../../session/media-text.js";
import { richMessageText } from "./rich-text.js";

/** A file of a message, to be fetched from Telegram. */
export type WantedFile = {
  fileId: string;
  size?: number;
  media: MediaKind;
  /** The type Gemini is given (the bytes are checked against it when they arrive). */
  mimeType: string;
  /** As cleaned once for every use (src/media/file-name.ts). */
  name?: string;
  duration?: number;
  /** How the user is told about it: "photo", "voice note", "document “a.zip”". */
  label: string;
};

/** What a message that is not plain text becomes. */
export type Inbound =
  /** A file to fetch; `instead` is said when it cannot be had (a sticker as its emoji). */
  | { kind: "file"; file: WantedFile; instead?: string }
  /** A location, a contact, a poll… as a short line for the model. */
  | { kind: "text"; text: string }
  /** A file Koroku cannot read: the user is told so. */
  | { kind: "refuse"; reply: string };

const AUDIO_TYPES: Record<string, string> = {
  "audio/ogg": "audio/ogg",
  "audio/opus": "audio/ogg",
  "audio/mpeg": "audio/mpeg",
  "audio/mp3": "audio/mp3",
  "audio/wav": "audio/wav",
  "audio/x-wav": "audio/wav",
  "audio/vnd.wave": "audio/wav",
  "audio/flac": "audio/flac",
  "audio/x-flac": "audio/flac",
  "audio/aac": "audio/aac",
  "audio/x-aac": "audio/aac",
  "audio/aiff": "audio/aiff",
  "audio/x-aiff": "audio/aiff",
  "audio/mp4": "audio/m4a",
  "audio/m4a": "audio/m4a",
  "audio/x-m4a": "audio/m4a",
};

const VIDEO_TYPES: Record<string, string> = {
  "video/mp4": "video/mp4",
  "video/mpeg": "video/mpeg",
  "video/quicktime": "video/quicktime",
  "video/webm": "video/webm",
  "video/3gpp": "video/3gpp",
  "video/x-msvideo": "video/avi",
  "video/avi": "video/avi",
};

const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/webp", "image/heic", "image/heif"]);

// Text and code files Gemini reads as text/plain, by extension (apps send many as octet-stream).
const TEXT_EXTENSIONS = new Set(
  (
    "txt md markdown csv tsv json jsonl yaml yml toml ini cfg conf log xml html htm css js mjs cjs " +
    "ts tsx jsx py rb go rs java kt c h cc cpp hpp cs php sh bash zsh sql swift scala lua pl r " +
    "tex srt vtt env gitignore dockerfile makefile"
  ).split(" "),
);
const TEXT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/x-sh",
  "application/javascript",
  "application/x-yaml",
  "application/sql",
]);

const extensionOf = (name: string | undefined) =>
  name?.toLowerCase().split(/[\\/]/).pop()?.split(".").slice(1).pop() ?? "";

/** The type Koroku reads a document as, or undefined when it cannot read it. */
function documentType(mimeType: string | undefined, name: string | undefined): string | undefined {
  const type = (mimeType ?? "").toLowerCase();
  const ext = extensionOf(name);
  if (type === "application/pdf" || ext === "pdf") return "application/pdf";
  if (IMAGE_TYPES.has(type)) return type;
  const audio = AUDIO_TYPES[type];
  if (audio) return audio;
  const video = VIDEO_TYPES[type];
  if (video) return video;
  if (type.startsWith("text/") || TEXT_TYPES.has(type) || TEXT_EXTENSIONS.has(ext))
    return "text/plain";
  const lowerName = name?.toLowerCase() ?? "";
  if (TEXT_EXTENSIONS.has(lowerName)) return "text/plain";
  return undefined;
}

/** The largest photo size that fits the limit (Telegram lists them smallest first). */
function bestPhoto(sizes: readonly PhotoSize[], maxBytes: number): PhotoSize {
  const fitting = sizes.filter((s) => s.file_size === undefined || s.file_size <= maxBytes);
  return (fitting.at(-1) ?? sizes[0]) as PhotoSize;
}

const quoted = (name: string) => `“${name}”`;

/**
 * What a message that is not plain text brings: a file to fetch (the largest photo that fits the
 * limit), a line of text, or a refusal with the file's name. Undefined for content Koroku has no
 * way to take (a story, a game, a checklist, an invoice, paid media).
 */
export function inboundOf(message: Message, maxBytes: number): Inbound | undefined {
  if (message.photo && message.photo.length > 0) {
    const photo = bestPhoto(message.photo, maxBytes);
    return {
      kind: "file",
      file: {
        fileId: photo.file_id,
        size: photo.file_size,
        media: "photo",
        mimeType: "image/jpeg",
        label: "photo",
      },
    };
  }
  if (message.voice) {
    const v = message.voice;
    return {
      kind: "file",
      file: {
        fileId: v.file_id,
        size: v.file_size,
        media: "voice",
        mimeType: AUDIO_TYPES[v.mime_type ?? "audio/ogg"] ?? "audio/ogg",
        duration: v.duration,
        label: "voice note",
      },
    };
  }
  if (message.video_note) {
    const v = message.video_note;
    return {
      kind: "file",
      file: {
        fileId: v.file_id,
        size: v.file_size,
        media: "video_note",
        mimeType: "video/mp4",
        duration: v.duration,
        label: "video note",
      },
    };
  }
  if (message.sticker) {
    const s = message.sticker;
    const emoji = `[Sticker ${s.emoji ?? "(no emoji)"}]`;
    if (s.is_animated || s.is_video) return { kind: "text", text: emoji };
    return {
      kind: "file",
      file: {
        fileId: s.file_id,
        size: s.file_size,
        media: "sticker",
        mimeType: "image/webp",
        label: "sticker",
      },
      instead: emoji,
    };
  }
  // An animation also carries a `document` (the same file): it is looked at first.
  const moving = message.animation ?? message.video;
  if (moving) {
    const media = message.animation ? "animation" : "video";
    const mimeType = VIDEO_TYPES[moving.mime_type ?? "video/mp4"];
    const name = cleanFileName(moving.file_name);
    if (!mimeType) return refuse(name ?? media, moving.mime_type);
    return {
      kind: "file",
      file: {
        fileId: moving.file_id,
        size: moving.file_size,
        media,
        mimeType,
        name,
        duration: moving.duration,
        label: media,
      },
    };
  }
  if (message.audio) {
    const a = message.audio;
    const mimeType = AUDIO_TYPES[a.mime_type ?? "audio/mpeg"];
    const name = cleanFileName(a.file_name ?? a.title);
    if (!mimeType) return refuse(name ?? "audio file", a.mime_type);
    return {
      kind: "file",
      file: {
        fileId: a.file_id,
        size: a.file_size,
        media: "audio",
        mimeType,
        name,
        duration: a.duration,
        label: name ? `audio file ${quoted(name)}` : "audio file",
      },
    };
  }
  if (message.document) {
    const d = message.document;
    const name = cleanFileName(d.file_name);
    const mimeType = documentType(d.mime_type, name);
    if (!mimeType) return refuse(name ?? "document", d.mime_type);
    return {
      kind: "file",
      file: {
        fileId: d.file_id,
        size: d.file_size,
        media: "document",
        mimeType,
        name,
        label: name ? `document ${quoted(name)}` : "document",
      },
    };
  }
  const text = describedText(message);
  return text === undefined ? undefined : { kind: "text", text };
}

function refuse(name: string, mimeType: string | undefined): Inbound {
  const type = mimeType ? ` (${mimeType})` : "";
  return {
    kind: "refuse",
    reply: `I cannot read ${quoted(name)}${type}: I read photos and images, PDFs, text and code files, audio and video. If you can, send it as one of those (a PDF export, say).`,
  };
}

const coordinates = (l: { latitude: number; longitude: number }) =>
  `${l.latitude.toFixed(6)}, ${l.longitude.toFixed(6)}`;

/** Locations, venues, contacts, polls and dice, as the short line the model reads. */
function describedText(message: Message): string | undefined {
  if (message.venue) {
    const v = message.venue;
    return `[Venue: ${v.title}, ${v.address} (${coordinates(v.location)})]`;
  }
  if (message.location) {
    const l = message.location;
    const live = l.live_period ? `, live for ${clockTime(l.live_period)}` : "";
    const accuracy = l.horizontal_accuracy ? `, ±${Math.round(l.horizontal_accuracy)} m` : "";
    return `[Location: ${coordinates(l)}${accuracy}${live}]`;
  }
  if (message.contact) {
    const c = message.contact;
    const name = [c.first_name, c.last_name].filter(Boolean).join(" ");
    return `[Contact: ${name}, ${c.phone_number}]`;
  }
  if (message.poll) {
    const p = message.poll;
    const options = p.options.map((o) => o.text).join(" / ");
    const kind = p.type === "quiz" ? "Quiz" : "Poll";
    return `[${kind}: ${p.question} — options: ${options}]`;
  }
  if (message.dice) return `[Dice ${message.dice.emoji} rolled: ${message.dice.value}]`;
  // One forwarded from a bot (one of Koroku's own answers, say): its words.
  if (message.rich_message) return richMessageText(message.rich_message) || undefined;
  return undefined;
}
