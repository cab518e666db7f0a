import type { Message } from "grammy/types";
import type { ReadAttachments } from "../../agent/request-media.js";
import type { Logger } from "../../logger.js";
import { sniff } from "../../media/sniff.js";
import { saveToWorkspace } from "../../media/workspace-inbox.js";
import { scopeOfKey } from "../../scope/recall-scope.js";
import type { Workspaces } from "../../scope/workspaces.js";
import type { NewAttachment, StoredAttachment } from "../../session/attachments.js";
import type { MediaPart } from "../../session/events.js";
import { type DownloadFile, FileTooBigError, FileUnavailableError, tooBigText } from "./files.js";
import { inboundOf, type WantedFile } from "./inbound.js";

export type ConversationMedia = {
  download: DownloadFile;
  /** Stores a file's bytes for the conversation (content-addressed; storing twice is harmless). */
  save(conversation: string, file: NewAttachment): Promise<StoredAttachment>;
  /** The bytes of stored files (the files an answer sends). */
  read: ReadAttachments;
  /** Largest file taken (MEDIA_MAX_BYTES). */
  maxBytes: number;
  /** Documents are saved into their conversation's scope folder (its inbox/). */
  workspaces: Workspaces;
  /**
   * Writes down what the conversation's voice notes say, after the answer went out (so it never
   * holds a turn up); what failed is tried again after a later turn. `heard`: the turn's message
   * held a voice note or audio.
   */
  transcribe?(conversation: string, heard: boolean): Promise<unknown>;
};

const NOT_IN_WORKSPACE =
  "[Not saved in the workspace: it could not be written to, so the file tools cannot open this file]";

const CANNOT_READ =
  "I cannot read this kind of message. Text, photos, voice notes, audio, video, stickers, documents, locations, contacts and polls I can.";

const PROBLEMS: Record<"empty" | "damaged" | "not text", (label: string) => string> = {
  empty: (label) => `Your ${label} is empty (0 bytes), so there is nothing for me to read.`,
  damaged: (label) =>
    `Your ${label} looks damaged or is not what its type says, so I could not read it. Please send it again, or export it afresh.`,
  "not text": (label) =>
    `Your ${label} is not plain text (UTF-8), so I could not read it. Send it as a PDF, or as text.`,
};

/**
 * What a message brings for the model: its file fetched from Telegram, checked and stored (a
 * document copied into the workspace too), or its content as words; or what the user is told
 * instead.
 */
export function messageInput(deps: { media: ConversationMedia; logger: Logger }) {
  const { media } = deps;

  /**
   * Fetches, checks and stores a message's file, and saves a document into the workspace too.
   * Returns the media part and a note for the model, or what the user is told instead. A
   * transient failure (the network, Telegram's 5xx, the database) is thrown for the inbox to retry.
   */
  async function fetchFile(
    conversation: string,
    file: WantedFile,
  ): Promise<{ part: MediaPart; note?: string } | { reply: string; unavailable?: true }> {
    let bytes: Buffer;
    try {
      bytes = await media.download(file.fileId, file.size);
    } catch (error) {
      if (error instanceof FileTooBigError) return { reply: tooBigText(error, file.label) };
      if (error instanceof FileUnavailableError) {
        deps.logger.warn({ err: error, chat_id: conversation }, "Telegram could not give a file");
        return {
          reply: `I could not fetch your ${file.label} from Telegram (${error.reason}). Please send it again.`,
          unavailable: true,
        };
      }
      throw error;
    }
    const sniffed = sniff(bytes, file.mimeType);
    if (!sniffed.ok) return { reply: PROBLEMS[sniffed.problem](file.label) };
    const stored = await media.save(conversation, {
      bytes,
      mimeType: sniffed.mimeType,
      fileName: file.name,
    });
    const part: MediaPart = {
      kind: "media",
      media: file.media,
      ...stored,
      // Absent rather than undefined: stored events keep no empty keys.
      ...(file.name === undefined ? {} : { name: file.name }),
      ...(file.duration === undefined ? {} : { duration: file.duration }),
    };
    if (file.media !== "document") return { part };
    const name = file.name ?? `document-${stored.sha256.slice(0, 12)}`;
    const scope = scopeOfKey(conversation);
    try {
      const saved = await saveToWorkspace(await media.workspaces.dirOf(scope), name, bytes);
      return { part, note: `[Saved in the workspace as ${saved}]` };
    } catch (error) {
      // The file is stored, and Gemini gets it: a workspace that cannot be used (read-only, full,
      // not sorted at start) costs the file tools their copy, not the user their answer.
      deps.logger.warn(
        { err: error, chat_id: conversation, sha256: stored.sha256, scope },
        "could not copy a document into the workspace; answering without that copy",
      );
      return { part, note: NOT_IN_WORKSPACE };
    }
  }

  /**
   * What a message that is not plain text brings for the model: its file (fetched and stored),
   * or its content as words — or what the user is told instead. The caption is the caller's.
   */
  async function readMessage(
    conversation: string,
    message: Message,
  ): Promise<{ parts: MediaPart[]; words: string[] } | { problem: string }> {
    const inbound = inboundOf(message, media.maxBytes);
    if (!inbound) return { problem: CANNOT_READ };
    if (inbound.kind === "refuse") return { problem: inbound.reply };
    if (inbound.kind === "text") return { parts: [], words: [inbound.text] };
    const fetched = await fetchFile(conversation, inbound.file);
    if ("reply" in fetched) {
      // A sticker Telegram cannot give any more (its set deleted) is still its emoji.
      if (fetched.unavailable && inbound.instead) return { parts: [], words: [inbound.instead] };
      return { problem: fetched.reply };
    }
    return { parts: [fetched.part], words: fetched.note ? [fetched.note] : [] };
  }

  /**
   * An album's items, oldest first, as one input: every item's file, the captions as the words.
   * An item that cannot be read is among the problems, by its place in the album.
   */
  async function readAlbum(conversation: string, items: readonly Message[]) {
    const parts: MediaPart[] = [];
    const words: string[] = [];
    const problems: string[] = [];
    for (const [index, item] of items.entries()) {
      const position = `${index + 1} of ${items.length}`;
      const read = await readMessage(conversation, item);
      if ("problem" in read) {
        problems.push(`Album item ${position}: ${read.problem}`);
        words.push(`[Item ${position} of the album could not be read]`);
        continue;
      }
      parts.push(...read.parts);
      words.push(...read.words);
    }
    const captioned = items.filter((m) => m.caption);
    for (const item of captioned) {
      const at = items.indexOf(item) + 1;
      words.push(
        captioned.length === 1 ? (item.caption as string) : `[Item ${at}] ${item.caption}`,
      );
    }
    return { parts, words, problems };
  }

  return { readMessage, readAlbum };
}

/** Lines joined, the empty ones left out. */
export const joinLines = (...lines: string[]) => lines.filter((l) => l !== "").join("\n");
