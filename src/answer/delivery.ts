import { type Api, GrammyError, InputFile } from "grammy";
import type { Logger } from "../logger.js";
import { TELEGRAM_UPLOAD_MAX_BYTES } from "../media/upload-limits.js";
import { LeaseLostError } from "../queue/inbox.js";
import { htmlToPlainText, splitMessage } from "../render/chunk.js";
import { renderMarkdown } from "../render/markdown-html.js";
import { type RichChunk, renderRichMessages } from "../render/rich/render.js";
import type { SentAs } from "../tools/registry.js";
import { type Carried, type Courier, type CourierRecord, noCourier } from "./courier.js";
import {
  FileTooLargeError,
  type OutgoingFile,
  sendsAsPhoto,
  uploadName,
} from "./outgoing-files.js";

const CANT_PARSE = /can't parse entities/i;
const NOT_MODIFIED = /message is not modified/i;
// Telegram shows "typing…" for about 5 seconds after each chat action.
export const TYPING_INTERVAL_MS = 4_000;
export const TYPING_DELAY_MS = 300;
const NO_ANSWER = "<i>(no answer)</i>";

export type Delivery = ReturnType<typeof createDelivery>;

/** How far a long answer got before, and where to record each further message that goes out. */
export type DeliveryProgress = {
  alreadySent: number;
  /**
   * Records that the first `count` messages went out; `rows` are what the courier's run of
   * `statement(count)` changed, when it ran it.
   */
  sent(count: number, rows?: number): Promise<void>;
  /** What records the first `count` messages, for the courier to run as Telegram accepts the last. */
  statement?(count: number): CourierRecord;
};

/** The options that put a message or chat action into a forum topic, when there is one. */
const inThread = (threadId: number | undefined) =>
  threadId === undefined ? {} : { message_thread_id: threadId };

function ignoreNotModified(error: unknown): void {
  if (!(error instanceof GrammyError && NOT_MODIFIED.test(error.description))) throw error;
}

const isCantParse = (error: unknown) =>
  error instanceof GrammyError && error.error_code === 400 && CANT_PARSE.test(error.description);

/**
 * Telegram HTML split under the length limit, each chunk one message. A lone surrogate (from a
 * model answer or a stored event) cannot be encoded as UTF-8, so Telegram would refuse the whole
 * message; U+FFFD in its place keeps every other word. Nothing Telegram would show (an empty code
 * block, zero-width characters) is said so instead.
 */
export function htmlChunks(html: string): string[] {
  const chunks = shownChunks(html);
  if (chunks.length === 0) chunks.push(NO_ANSWER);
  return chunks;
}

/** htmlChunks without the stand-in: none when Telegram would show nothing (an empty draft). */
export const shownChunks = (html: string): string[] => splitMessage(html.toWellFormed());

/**
 * A rich message Telegram refused for what it holds (400), or a Bot API server without rich
 * messages (404: a local server older than 10.1). Anything else is no reason to send it again.
 */
function refusedRich(error: unknown): error is GrammyError {
  return error instanceof GrammyError && (error.error_code === 400 || error.error_code === 404);
}

export type DeliveryDeps = {
  api: Api;
  logger: Logger;
  /** Answers as rich messages (RICH_MESSAGES); otherwise, and by default, HTML messages. */
  richMessages?: boolean;
  /** Sends the messages and files of answers and records them off the main thread; none by default. */
  courier?: Courier;
};

/** Sends what Koroku has to say, in as many valid messages as it takes. */
export function createDelivery(deps: DeliveryDeps) {
  const { api } = deps;
  // Through every transformer of `api`, as its own calls go.
  const carrier = (deps.courier ?? noCourier).over(api);
  // Learnt from a 404, so that a server without rich messages costs one refused call, not one
  // per answer.
  let richUnavailable = false;

  /**
   * Sends one chunk of HTML; returns the message's id. With `record`, the courier runs it the
   * moment Telegram accepts the message, and `rows` says what it changed (see Carrier.send).
   */
  async function sendChunk(
    chatId: number,
    html: string,
    threadId?: number,
    record?: CourierRecord,
  ): Promise<Carried<number>> {
    const send = async (text: string, options: { parse_mode?: "HTML" }) => {
      const { value, rows } = await carrier.send(
        "sendMessage",
        {
          chat_id: chatId,
          text,
          ...options,
          link_preview_options: { is_disabled: true },
          ...inThread(threadId),
        },
        record,
      );
      return { value: value.message_id, rows };
    };
    try {
      return await send(html, { parse_mode: "HTML" });
    } catch (error) {
      if (!isCantParse(error)) throw error;
      // Our renderer should never produce HTML Telegram rejects; if it does, the words still arrive.
      deps.logger.warn(
        { err: error },
        "Telegram rejected the HTML; sending the chunk as plain text",
      );
      return send(htmlToPlainText(html), {});
    }
  }

  /** Whether answers go out rich: RICH_MESSAGES is on, and Telegram has not said it has none. */
  const richWanted = () => deps.richMessages === true && !richUnavailable;

  /**
   * Whether a failed rich call (a message, a draft, an edit) is Telegram refusing rich content,
   * to be said another way; a 404 turns rich content off for the rest of the process.
   */
  function richRefused(error: unknown): error is GrammyError {
    if (!refusedRich(error)) return false;
    if (error.error_code === 404) richUnavailable = true;
    return true;
  }

  /** Sends one rich message, without a fallback (see richRefused); returns its id, as sendChunk. */
  async function sendRichChunk(
    chatId: number,
    html: string,
    threadId?: number,
    record?: CourierRecord,
  ): Promise<Carried<number>> {
    const { value, rows } = await carrier.send(
      "sendRichMessage",
      { chat_id: chatId, rich_message: { html }, ...inThread(threadId) },
      record,
    );
    return { value: value.message_id, rows };
  }

  /** Makes a message the given rich message; the same content again is not an error. */
  async function editRich(chatId: number, messageId: number, html: string): Promise<void> {
    await api.editMessageText(chatId, messageId, { html }).catch(ignoreNotModified);
  }

  /** Replaces a message's text with one chunk of HTML; an unchanged text is not an error. */
  async function editChunk(chatId: number, messageId: number, html: string): Promise<void> {
    const options = { parse_mode: "HTML", link_preview_options: { is_disabled: true } } as const;
    try {
      await api.editMessageText(chatId, messageId, html, options);
    } catch (error) {
      if (error instanceof GrammyError && NOT_MODIFIED.test(error.description)) return;
      if (!isCantParse(error)) throw error;
      deps.logger.warn({ err: error }, "Telegram rejected the HTML; editing as plain text");
      await api
        .editMessageText(chatId, messageId, htmlToPlainText(html), {
          link_preview_options: { is_disabled: true },
        })
        .catch(ignoreNotModified);
    }
  }

  /**
   * Sends prepared Telegram HTML, split under the length limit. With `progress`, the messages an
   * earlier attempt sent are skipped, and each one is recorded as soon as Telegram has it, the
   * last one too: recorded only with the whole update, after the turn's remaining work, it would
   * be sent again by a restart that came in between (a kill under load found that window wide).
   */
  async function sendHtml(
    chatId: number,
    html: string,
    threadId?: number,
    progress?: DeliveryProgress,
  ): Promise<void> {
    const chunks = htmlChunks(html);
    for (let i = progress?.alreadySent ?? 0; i < chunks.length; i++) {
      const statement = progress?.statement?.(i + 1);
      const { rows } = await sendChunk(chatId, chunks[i] as string, threadId, statement);
      if (progress) await record(progress, i + 1, chatId, rows);
    }
  }

  /**
   * A record is only a head start on the update's own 'done', which is retried until the database
   * answers: one that fails with the database away must not fail the answer, or the update's retry
   * would send again what Telegram already has. A lost lease still stops it: another run has it.
   */
  async function record(
    progress: DeliveryProgress,
    count: number,
    chatId: number,
    rows?: number,
  ): Promise<void> {
    try {
      await progress.sent(count, rows);
    } catch (error) {
      if (error instanceof LeaseLostError) throw error;
      deps.logger.warn(
        { err: error, chat_id: chatId, delivered: count },
        "could not record a message Telegram accepted; the update's end records it",
      );
    }
  }

  /**
   * Sends Markdown (what Gemini writes): as rich messages when they are on, else rendered to
   * Telegram HTML. `progress` counts rich messages the way sendHtml counts HTML ones; one that
   * fell back to HTML counts once, however many HTML messages it took.
   */
  async function sendMarkdown(
    chatId: number,
    markdown: string,
    threadId?: number,
    progress?: DeliveryProgress,
  ): Promise<void> {
    const chunks = deps.richMessages ? renderRichMessages(markdown) : [];
    if (chunks.length === 0) {
      await sendHtml(chatId, renderMarkdown(markdown), threadId, progress);
      return;
    }
    for (let i = progress?.alreadySent ?? 0; i < chunks.length; i++) {
      const statement = progress?.statement?.(i + 1);
      const rows = await sendRich(statement, chatId, chunks[i] as RichChunk, threadId);
      if (progress) await record(progress, i + 1, chatId, rows);
    }
  }

  /**
   * One rich message; refused, the same blocks as HTML (and that, refused, as plain text). The
   * rich message carries `statement`, or else the last of its HTML stand-in's messages: the rich
   * message counts once however many HTML messages it took. Returns what the courier's run of
   * `statement` changed.
   */
  async function sendRich(
    statement: CourierRecord | undefined,
    chatId: number,
    chunk: RichChunk,
    threadId?: number,
  ): Promise<number | undefined> {
    if (!richUnavailable) {
      try {
        return (await sendRichChunk(chatId, chunk.html, threadId, statement)).rows;
      } catch (error) {
        if (!richRefused(error)) throw error;
        deps.logger.warn(
          { err: error },
          "Telegram refused the rich message; sending its blocks as HTML",
        );
      }
    }
    const pieces = htmlChunks(chunk.fallbackHtml);
    let rows: number | undefined;
    for (const [i, piece] of pieces.entries()) {
      const last = i === pieces.length - 1;
      rows = (await sendChunk(chatId, piece, threadId, last ? statement : undefined)).rows;
    }
    return rows;
  }

  /**
   * Sends a file as a photo when Telegram shows it as one, else as a document; a photo Telegram
   * cannot process after all goes again as a document. The call that goes carries `record` of
   * what it sends as. Throws FileTooLargeError past 50 MB.
   */
  async function sendFile(
    chatId: number,
    file: OutgoingFile,
    threadId?: number,
    record?: (sentAs: SentAs) => CourierRecord,
  ): Promise<Carried<SentAs>> {
    if (file.bytes.byteLength > TELEGRAM_UPLOAD_MAX_BYTES) {
      throw new FileTooLargeError(file.name, file.bytes.byteLength);
    }
    const input = () => new InputFile(file.bytes, uploadName(file.name));
    const extra = {
      chat_id: chatId,
      ...inThread(threadId),
      ...(file.caption ? { caption: file.caption } : {}),
    };
    if (sendsAsPhoto(file)) {
      try {
        const { rows } = await carrier.send(
          "sendPhoto",
          { ...extra, photo: input() },
          record?.("photo"),
        );
        return { value: "photo", rows };
      } catch (error) {
        if (!(error instanceof GrammyError && error.error_code === 400)) throw error;
        deps.logger.warn({ err: error }, "Telegram refused a photo; sending it as a document");
      }
    }
    const { rows } = await carrier.send(
      "sendDocument",
      { ...extra, document: input() },
      record?.("document"),
    );
    return { value: "document", rows };
  }

  /** Sends files one by one; `progress` counts them as sendHtml counts messages. */
  async function sendFiles(
    chatId: number,
    files: readonly OutgoingFile[],
    threadId?: number,
    progress?: DeliveryProgress,
  ): Promise<void> {
    for (let i = progress?.alreadySent ?? 0; i < files.length; i++) {
      const statement = progress?.statement?.(i + 1);
      const { rows } = await sendFile(
        chatId,
        files[i] as OutgoingFile,
        threadId,
        statement && (() => statement),
      );
      if (progress) await record(progress, i + 1, chatId, rows);
    }
  }

  /**
   * Sends an Ogg Opus voice note; returns its message's id. With `record`, the courier runs it
   * the moment Telegram accepts the note (see Carrier.send).
   */
  async function sendVoice(
    chatId: number,
    voice: { bytes: Buffer; seconds: number },
    threadId?: number,
    record?: CourierRecord,
  ): Promise<Carried<number>> {
    const { value, rows } = await carrier.send(
      "sendVoice",
      {
        chat_id: chatId,
        voice: new InputFile(voice.bytes, "voice.ogg"),
        duration: Math.max(1, Math.round(voice.seconds)),
        ...inThread(threadId),
      },
      record,
    );
    return { value: value.message_id, rows };
  }

  /**
   * Shows "typing…" (or another chat action: "recording a voice message…") until the returned
   * function is called. Failures only cost the indicator.
   */
  function showTyping(
    chatId: number,
    threadId?: number,
    action: "typing" | "record_voice" | "upload_photo" = "typing",
  ): () => void {
    const extra = inThread(threadId);
    // Ends the indicator's requests with the turn: while Telegram is unreachable, each would
    // otherwise be tried again (retryNetworkFailures) long after, and they would pile up.
    const requests = new AbortController();
    const send = () => {
      api
        .sendChatAction(
          chatId,
          action,
          extra,
          // grammY types its signal with the abort-controller polyfill; Node's own is compatible.
          requests.signal as unknown as Parameters<Api["sendChatAction"]>[3],
        )
        .catch(() => {});
    };
    // An answer that comes at once needs no indicator; one that takes longer shows it early.
    let repeat: NodeJS.Timeout | undefined;
    const first = setTimeout(() => {
      send();
      repeat = setInterval(send, TYPING_INTERVAL_MS);
    }, TYPING_DELAY_MS);
    return () => {
      clearTimeout(first);
      clearInterval(repeat);
      requests.abort();
    };
  }

  return {
    sendHtml,
    sendMarkdown,
    sendFile,
    sendFiles,
    sendVoice,
    showTyping,
    sendChunk,
    editChunk,
    richWanted,
    richRefused,
    sendRichChunk,
    editRich,
  };
}
