import { type Api, GrammyError } from "grammy";
import type { TurnProgress } from "../agent/turn.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import { toolStatus } from "../tools/status.js";
import { type Delivery, type DeliveryProgress, htmlChunks } from "./delivery.js";
import { escapeHtml, renderMarkdown } from "./render.js";

/**
 * Between two drafts of one chat: four a second, under the five Telegram allows, so that a draft
 * retried after a network hiccup does not push a chat over.
 */
export const DRAFT_INTERVAL_MS = 250;
/** Between two edits of one message: groups allow a bot about 20 messages a minute. */
export const EDIT_INTERVAL_MS = 1_500;
/** A draft disappears 30 s after its last update; one that is not growing is shown again. */
export const DRAFT_REFRESH_MS = 20_000;

export type LiveAnswerDeps = {
  /** An Api without auto-retry: a draft retried later would be stale, the next one replaces it. */
  api: Api;
  delivery: Delivery;
  logger: Logger;
  chatId: number;
  threadId?: number;
  /** Drafts exist in private chats only. */
  privateChat: boolean;
  mode: StreamingMode;
  /** Non-zero, the same for every run of one update (the stop button names it). */
  draftId: number;
  draftIntervalMs?: number;
  editIntervalMs?: number;
};

export type LiveAnswer = {
  progress: TurnProgress;
  /**
   * Sends the finished answer. Drafts end first (one arriving after the answer would show it
   * twice); in edit mode the messages shown while it was written become the answer.
   */
  finish(markdown: string, progress?: DeliveryProgress): Promise<void>;
  /** Ends the live view without an answer (the turn failed). */
  close(): Promise<void>;
};

type Shown = { kind: "draft" } | { kind: "edit"; messages: number[]; chunks: string[] };

const inThread = (threadId: number | undefined) =>
  threadId === undefined ? {} : { message_thread_id: threadId };

/** The part of a long answer a draft can show: its last message's worth, where it is growing. */
const draftHtml = (html: string): string => htmlChunks(html).at(-1) ?? "";

/** Shows a Telegram answer while the model writes it: as a draft, or as a message edited in place. */
export function startLiveAnswer(deps: LiveAnswerDeps): LiveAnswer {
  const { api, delivery, chatId, threadId } = deps;
  const drafts = deps.mode === "auto" || deps.mode === "draft";
  let shown: Shown | undefined =
    deps.mode === "off" ? undefined : drafts && deps.privateChat ? { kind: "draft" } : edits();
  const interval = () =>
    shown?.kind === "draft"
      ? (deps.draftIntervalMs ?? DRAFT_INTERVAL_MS)
      : (deps.editIntervalMs ?? EDIT_INTERVAL_MS);

  function edits(): Shown | undefined {
    return deps.mode === "draft" ? undefined : { kind: "edit", messages: [], chunks: [] };
  }

  /** What to show next, rendered only when it is sent: most chunks are replaced before then. */
  let wanted: (() => string) | undefined;
  let lastShown = "";
  let busy: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let nextAt = 0;
  let closed = false;
  const requests = new AbortController();
  const signal = requests.signal as unknown as Parameters<Api["sendMessageDraft"]>[4];

  function show(html: () => string): void {
    if (closed || shown === undefined) return;
    wanted = html;
    pump();
  }

  function pump(): void {
    if (closed || busy || timer || wanted === undefined) return;
    const wait = nextAt - Date.now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        pump();
      }, wait);
      return;
    }
    const html = wanted();
    wanted = undefined;
    if (html === lastShown && shown?.kind === "edit") return;
    nextAt = Date.now() + interval();
    busy = push(html)
      .then(() => {
        lastShown = html;
      })
      .catch(failed)
      .finally(() => {
        busy = undefined;
        pump();
      });
  }

  async function push(html: string): Promise<void> {
    if (shown?.kind === "draft") {
      const text = draftHtml(html);
      await api.sendMessageDraft(
        chatId,
        deps.draftId,
        text,
        { parse_mode: "HTML", can_stop: true, ...inThread(threadId) },
        signal,
      );
      scheduleRefresh();
    } else if (shown?.kind === "edit") {
      await showInMessages(shown, html === "" ? [] : htmlChunks(html));
    }
  }

  /** Edits the messages that changed, and sends the ones the answer grew into. */
  async function showInMessages(
    into: Extract<Shown, { kind: "edit" }>,
    chunks: readonly string[],
  ): Promise<void> {
    for (const [i, chunk] of chunks.entries()) {
      const id = into.messages[i];
      if (id === undefined) into.messages.push(await delivery.sendChunk(chatId, chunk, threadId));
      else if (into.chunks[i] !== chunk) await delivery.editChunk(chatId, id, chunk);
      into.chunks[i] = chunk;
    }
  }

  /** Messages a longer draft of the answer needed and the finished one does not (after a restart). */
  async function dropExtraMessages(into: Extract<Shown, { kind: "edit" }>, keep: number) {
    for (const id of into.messages.splice(keep)) {
      await api.deleteMessage(chatId, id).catch((error: unknown) => {
        deps.logger.warn({ err: error, chat_id: chatId }, "could not delete a message left over");
      });
    }
  }

  let refresh: NodeJS.Timeout | undefined;
  function scheduleRefresh(): void {
    clearTimeout(refresh);
    refresh = setTimeout(() => show(() => lastShown), DRAFT_REFRESH_MS);
    refresh.unref();
  }

  function failed(error: unknown): void {
    if (closed) return;
    if (error instanceof GrammyError && error.error_code === 429) {
      nextAt = Date.now() + (error.parameters.retry_after ?? 1) * 1000;
      deps.logger.warn(
        { chat_id: chatId, retry_after: error.parameters.retry_after },
        "live answer throttled by Telegram",
      );
      return;
    }
    if (shown?.kind === "draft" && error instanceof GrammyError && error.error_code === 400) {
      // Drafts refused here (not a private chat after all, an older client): edit in place.
      deps.logger.info(
        { chat_id: chatId, err: error.description },
        "drafts refused; editing a message instead",
      );
      shown = edits();
      nextAt = 0;
      const again = lastShown;
      wanted ??= () => again;
      lastShown = "";
      return;
    }
    // Only the live view suffers; the finished answer is sent on its own.
    deps.logger.warn({ err: error, chat_id: chatId }, "could not update the live answer");
  }

  async function close(): Promise<void> {
    closed = true;
    clearTimeout(timer);
    clearTimeout(refresh);
    requests.abort();
    await busy;
  }

  let round = "";
  const progress: TurnProgress = {
    text(text) {
      round = text;
      show(() => renderMarkdown(text));
    },
    restart() {
      round = "";
      show(() => "");
    },
    tool(name, args) {
      const status = `<i>${escapeHtml(toolStatus(name, args))}</i>`;
      const before = round;
      show(() => (before.trim() === "" ? status : `${renderMarkdown(before)}\n\n${status}`));
    },
  };

  return {
    progress,
    close,
    async finish(markdown, deliveryProgress) {
      const live = shown;
      await close();
      if (live?.kind === "edit" && live.messages.length > 0) {
        const chunks = htmlChunks(renderMarkdown(markdown));
        await showInMessages(live, chunks);
        await dropExtraMessages(live, chunks.length);
        return;
      }
      await delivery.sendMarkdown(chatId, markdown, threadId, deliveryProgress);
    },
  };
}
