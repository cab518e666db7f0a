import type { Part } from "@google/genai";
import type { Logger } from "../logger.js";
import type { MediaPart, MediaToGemini } from "../session/events.js";
import type { GeminiFileRef } from "../session/gemini-file-refs.js";
import { mediaNote } from "../session/media-text.js";
import { sendableEvents } from "../session/refusals.js";
import type { ChatContext } from "../session/store.js";
import { GeminiRefusedError } from "./gemini-errors.js";
import {
  GeminiFileNotReadyError,
  GeminiFileRefusedError,
  type GeminiFiles,
  type UploadedFile,
} from "./gemini-files.js";

/**
 * A media part is sent inline (its bytes in the request) when it is at most this large: a photo
 * as Telegram sends it (a few hundred kilobytes), a voice note of a minute or two, a short PDF.
 * Larger files go through Gemini's Files API, uploaded once and named by uri in every request after.
 */
export const INLINE_PART_MAX_BYTES = 1024 * 1024;

/**
 * Inline bytes one request carries at most, counted from the oldest media of the context on.
 * Gemini takes 100 MB, but every request sends them again (each tool round, each turn), as base64
 * held in memory for as long as the model answers; an uploaded file is sent once. Measured in
 * docs/decisions/0001-inline-media-budget.md.
 */
export const INLINE_BUDGET_BYTES = 2 * 1024 * 1024;

/** A file expiring sooner than this is uploaded again: a turn must not outlive its files. */
export const REUPLOAD_MARGIN_MS = 60 * 60 * 1000;

/** How many files a request uploads at once (after 48 hours, all of a context's files expire). */
const UPLOADS_AT_ONCE = 4;
/** How long Gemini keeps an uploaded file (its Files API deletes it after 48 hours). */
const FILE_LIFE_MS = 48 * 60 * 60 * 1000;
/** When an upload Gemini had not finished processing is asked after again. */
const NOT_READY_RETRY_MS = 60 * 60 * 1000;

export type ReadAttachments = (hashes: readonly string[]) => Promise<Map<string, Buffer>>;

/** What request-media needs of the gemini_files table (src/session/gemini-file-refs.ts). */
export type GeminiFileStore = {
  find(hashes: readonly string[]): Promise<Map<string, GeminiFileRef>>;
  save(sha256: string, ref: GeminiFileRef): Promise<void>;
  forget(hashes: readonly string[]): Promise<void>;
};

/** The MIME type Gemini is given: it reads text and code files only under text/plain. */
export function geminiMimeType(part: MediaPart): string {
  if (part.mimeType.startsWith("text/") || part.mimeType === "application/json")
    return "text/plain";
  return part.mimeType;
}

export type Route = "inline" | "file";

/**
 * How each file of the context reaches Gemini, by SHA-256. The rule only looks at a part and the
 * parts before it, so a part keeps its form from one request to the next however many media
 * come after it: the request's prefix stays the same, which Gemini's prompt cache needs. Only a
 * compaction, which changes the start of the context anyway, can move a file from uri to inline.
 */
export function routeMedia(context: ChatContext): Map<string, Route> {
  const routes = new Map<string, Route>();
  let inlineBytes = 0;
  for (const stored of context.events) {
    for (const part of stored.event.parts) {
      // A voice note of Koroku's own answer is never sent (events.ts, toContent).
      if (part.kind !== "media" || part.spoken) continue;
      const known = routes.get(part.sha256);
      if (known !== undefined) {
        // Sent again where it appears again.
        if (known === "inline") inlineBytes += part.size;
        continue;
      }
      const inline =
        part.size <= INLINE_PART_MAX_BYTES && inlineBytes + part.size <= INLINE_BUDGET_BYTES;
      routes.set(part.sha256, inline ? "inline" : "file");
      if (inline) inlineBytes += part.size;
    }
  }
  return routes;
}

/** A request's media: how each part is sent, and which uploaded file stands for which bytes. */
export type RequestMedia = {
  toGemini: MediaToGemini;
  /** The Files API names (`files/…`) the request refers to, each to its attachment's SHA-256. */
  files: ReadonlyMap<string, string>;
};

export type MediaSource = {
  /**
   * Reads the inline media from the database and makes sure every other one is uploaded, and
   * not about to expire (uploading it again if it is).
   */
  forRequest(context: ChatContext): Promise<RequestMedia>;
  /**
   * Gemini answered that a file the request named is gone (deleted early, or a new API key):
   * it is forgotten, to be uploaded again, and true returned. False for any other error.
   */
  recover(error: unknown, media: RequestMedia): Promise<boolean>;
};

/**
 * Runs `call` with a request's media; when Gemini answers that a file the request named is gone,
 * the file is uploaded again and `call` runs anew with the new media (twice at most).
 */
export async function retryingLostFiles<T>(
  source: MediaSource,
  context: ChatContext,
  media: RequestMedia,
  call: (media: RequestMedia) => Promise<T>,
): Promise<T> {
  let current = media;
  for (let reuploads = 0; ; reuploads++) {
    try {
      return await call(current);
    } catch (error) {
      if (reuploads >= 2 || !(await source.recover(error, current))) throw error;
      current = await source.forRequest(context);
    }
  }
}

export type MediaSourceDeps = {
  readAttachments: ReadAttachments;
  store: GeminiFileStore;
  files: GeminiFiles;
  logger: Logger;
  now?: () => number;
};

// Gemini's words for a file it no longer holds (403), or one a request may not use yet (400).
const GONE =
  /access the File ([a-z0-9-]+) or it may not exist|The File ([a-z0-9-]+) is not in an ACTIVE state/;

const mediaPartsOf = (context: ChatContext): MediaPart[] =>
  context.events.flatMap((stored) =>
    stored.event.parts.filter((part): part is MediaPart => part.kind === "media" && !part.spoken),
  );

export function createMediaSource(deps: MediaSourceDeps): MediaSource {
  const now = deps.now ?? Date.now;
  // An uploaded file must outlive the turn; a failed upload's time is when to try again.
  const usable = (ref: GeminiFileRef | undefined) =>
    ref !== undefined &&
    Date.parse(ref.expiresAt) - (ref.kind === "uploaded" ? REUPLOAD_MARGIN_MS : 0) > now();

  /** An upload Gemini is still processing, asked after again once it may be done. */
  const stillProcessing = (
    file: Pick<UploadedFile, "name" | "uri" | "mimeType">,
  ): GeminiFileRef => ({
    kind: "processing",
    ...file,
    expiresAt: new Date(now() + NOT_READY_RETRY_MS).toISOString(),
  });

  /** What became of an upload Gemini was still processing; undefined: it is to be uploaded anew. */
  async function askedAfter(earlier: GeminiFileRef | undefined) {
    if (earlier?.kind !== "processing") return undefined;
    const checked = await deps.files.check(earlier.name);
    if (checked === "processing") return stillProcessing(earlier);
    return checked && ({ kind: "uploaded", ...checked } satisfies GeminiFileRef);
  }

  /**
   * Uploads one attachment (or records why Gemini will not take it); undefined if its bytes are
   * gone. One Gemini was still processing is asked after rather than uploaded again.
   */
  async function upload(
    part: MediaPart,
    earlier?: GeminiFileRef,
  ): Promise<GeminiFileRef | undefined> {
    const mimeType = geminiMimeType(part);
    const started = performance.now();
    let ref: GeminiFileRef;
    try {
      const known = await askedAfter(earlier);
      if (known) {
        ref = known;
      } else {
        const bytes = (await deps.readAttachments([part.sha256])).get(part.sha256);
        if (!bytes) return undefined;
        ref = { kind: "uploaded", ...(await deps.files.upload(bytes, mimeType, part.sha256)) };
        deps.logger.info(
          { sha256: part.sha256, bytes: part.size, ms: Math.round(performance.now() - started) },
          "uploaded a file to Gemini",
        );
      }
    } catch (error) {
      if (error instanceof GeminiFileNotReadyError) {
        deps.logger.warn(
          { sha256: part.sha256, mime_type: mimeType, reason: error.reason },
          "Gemini has not processed a file in time; it is described in words for now",
        );
        ref = stillProcessing(error.file);
      } else if (error instanceof GeminiFileRefusedError) {
        deps.logger.warn(
          { sha256: part.sha256, mime_type: mimeType, reason: error.reason },
          "Gemini refused a file; it is described in words",
        );
        // Asked again only once Gemini would have deleted it anyway.
        const expiresAt = new Date(now() + FILE_LIFE_MS).toISOString();
        ref = { kind: "failed", mimeType, reason: error.reason, expiresAt };
      } else {
        throw error;
      }
    }
    await deps.store.save(part.sha256, ref);
    return ref;
  }

  /**
   * Uploads under way, by SHA-256: a turn that needs one joins it rather than upload the file again
   * (a stopped turn leaves its upload running, for the next).
   */
  const underWay = new Map<string, Promise<GeminiFileRef | undefined>>();
  function uploadOnce(
    part: MediaPart,
    earlier?: GeminiFileRef,
  ): Promise<GeminiFileRef | undefined> {
    let pending = underWay.get(part.sha256);
    if (!pending) {
      pending = upload(part, earlier).finally(() => underWay.delete(part.sha256));
      underWay.set(part.sha256, pending);
    }
    return pending;
  }

  async function uploadAll(parts: readonly MediaPart[], into: Map<string, GeminiFileRef>) {
    for (let i = 0; i < parts.length; i += UPLOADS_AT_ONCE) {
      await Promise.all(
        parts.slice(i, i + UPLOADS_AT_ONCE).map(async (part) => {
          const ref = await uploadOnce(part, into.get(part.sha256));
          if (ref) into.set(part.sha256, ref);
        }),
      );
    }
  }

  async function forRequest(whole: ChatContext): Promise<RequestMedia> {
    // A file Gemini refused is neither read nor uploaded: a stand-in goes in its place.
    const context = { ...whole, events: sendableEvents(whole.events) };
    const routes = routeMedia(context);
    const byRoute = (route: Route) =>
      [...routes].filter(([, r]) => r === route).map(([sha256]) => sha256);
    const [bytes, refs] = await Promise.all([
      deps.readAttachments(byRoute("inline")),
      deps.store.find(byRoute("file")),
    ]);
    const stale = new Map<string, MediaPart>();
    for (const part of mediaPartsOf(context)) {
      if (routes.get(part.sha256) === "file" && !usable(refs.get(part.sha256)))
        stale.set(part.sha256, part);
    }
    await uploadAll([...stale.values()], refs);
    const files = new Map<string, string>();
    for (const [sha256, ref] of refs) if (ref.kind === "uploaded") files.set(ref.name, sha256);

    // Encoded once, and the bytes let go: the request holds the base64 for as long as the model
    // takes to answer, and the bytes beside it would add three quarters as much again.
    const encoded = new Map<string, string>();
    for (const [sha256, data] of bytes) encoded.set(sha256, data.toString("base64"));
    const toGemini = (part: MediaPart): Part => {
      const base64 = encoded.get(part.sha256);
      if (base64 !== undefined) {
        return { inlineData: { mimeType: geminiMimeType(part), data: base64 } };
      }
      const ref = refs.get(part.sha256);
      if (ref?.kind !== "uploaded") return mediaNote(part);
      return { fileData: { fileUri: ref.uri, mimeType: ref.mimeType } };
    };
    return { toGemini, files };
  }

  async function recover(error: unknown, media: RequestMedia): Promise<boolean> {
    if (!(error instanceof GeminiRefusedError) || media.files.size === 0) return false;
    const match = GONE.exec(error.message);
    if (!match) return false;
    const id = match[1] ?? match[2];
    const named = media.files.get(`files/${id}`);
    // A file Koroku did not name: every file of the request is suspect.
    const hashes = named ? [named] : [...media.files.values()];
    deps.logger.warn(
      { file: id, files: hashes.length },
      "Gemini no longer holds a file; uploading it again",
    );
    await deps.store.forget(hashes);
    return true;
  }

  return { forRequest, recover };
}
