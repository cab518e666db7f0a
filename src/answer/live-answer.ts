import { type Api, GrammyError } from "grammy";
import type { TurnProgress } from "../agent/turn.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import { LeaseLostError } from "../queue/inbox.js";
import { escapeHtml, renderMarkdown } from "../render/markdown-html.js";
import { renderRichMessages, richDraftHtml } from "../render/rich/render.js";
import { toolStatus } from "../tools/status.js";
import type { Carried, CourierRecord } from "./courier.js";
import { type Delivery, type DeliveryProgress, htmlChunks } from "./delivery.js";

/**
 * Between two drafts of one chat: four a second, under the five Telegram allows, so that a draft
 * retried after a network hiccup does not push a chat over.
 */
export const DRAFT_INTERVAL_MS = 250;
/** Between two edits of one message: groups allow a bot about 20 messages a minute. */
export const EDIT_INTERVAL_MS = 1_500;
/** A draft disappears 30 s after its last update; one that is not growing is shown again. */
export const DRAFT_REFRESH_MS = 20_000;
/**
 * Drafts and edits per second over all the answers a process writes at once. Telegram lets a bot
 * send about 30 messages a second in all; and each update costs this process CPU that the answers
 * themselves need (50 chats at four drafts a second kept two cores busy).
 */
export const LIVE_UPDATES_PER_SECOND = 30;

export type LivePacer = ReturnType<typeof createLivePacer>;

/**
 * Spreads the live updates of answers written at once over one budget: an answer's updates come
 * further apart the more answers stream beside it. Each answer's first update is never held back.
 */
export function createLivePacer(perSecond = LIVE_UPDATES_PER_SECOND) {
  let streaming = 0;
  return {
    /** An answer is being shown as it is written; the returned function says it ended. */
    join(): () => void {
      streaming++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        streaming--;
      };
    },
    /** The least time between two updates of one answer, now. */
    spacingMs: () => (streaming * 1_000) / perSecond,
  };
}

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
  /** Shared by the answers the process writes at once (see createLivePacer). */
  pacer?: LivePacer;
  /**
   * Messages an earlier run of this update showed the answer in (edit mode, then the process
   * died): this run shows it in them again, edited, instead of sending it a second time.
   */
  shownBefore?: readonly number[];
  /**
   * Records the messages the answer is shown in, all of them, whenever one is added or dropped;
   * `rows` are what the courier's run of messagesStatement changed, when it ran it.
   */
  recordMessages?(ids: readonly number[], rows?: number): Promise<void>;
  /**
   * What records the messages, `ids` with null for the one being sent, for the courier to run
   * the moment Telegram accepts it with that message's id in its place.
   */
  messagesStatement?(ids: readonly (number | null)[]): CourierRecord;
};

/** How the live view goes on after the answer's words went out, for the work that follows them. */
export type AfterView = {
  /** Whether the live view shows the status (else a chat action may stand in for it). */
  readonly showing: boolean;
  /** Before a message is sent: no draft of the status may arrive after it. */
  quiet(): Promise<void>;
  /** Shows the status again after a message took the draft's place, while more is coming. */
  again(): void;
};

/** Work after the answer's words went out (speaking them), and what the live view says meanwhile. */
export type AfterAnswer = { status: string; run(view: AfterView): Promise<void> };

export type LiveAnswer = {
  progress: TurnProgress;
  /** Shows `line` in italics below the words shown now, as a tool's status is shown. */
  status(line: string): void;
  /** Whether the answer shows as it is written (a draft, a message edited in place). */
  readonly showing: boolean;
  /**
   * The answer's words the live view shows now: the model call's text so far, or while a tool
   * runs the text written before it; "" when nothing is shown, or the stream started over.
   */
  readonly words: string;
  /**
   * Sends the finished answer. Drafts end first (one arriving after the answer would show it
   * twice); in edit mode the messages shown while it was written become the answer.
   *
   * With `after`, its work runs once the words are out, its status showing meanwhile: in edit
   * mode below the words, until the work ends and the messages become the finished answer; with
   * drafts, as a draft of its own after the answer's message (the stop button on it), which the
   * next message the work sends takes the place of.
   */
  finish(markdown: string, progress?: DeliveryProgress, after?: AfterAnswer): Promise<void>;
  /** Ends the live view without an answer (the turn failed). */
  close(): Promise<void>;
};

/** The status stays below the answer's words in its messages, until they become the answer. */
const IN_MESSAGES: AfterView = { showing: true, quiet: async () => {}, again: () => {} };
/** Nothing live to show the status in. */
export const NOT_SHOWN: AfterView = { showing: false, quiet: async () => {}, again: () => {} };

/** What the live view shows: the answer so far, and what the model is doing, if anything. */
type Frame = { readonly markdown: string; readonly status?: string };

type Shown =
  /** `rich`: sendRichMessageDraft, else sendMessageDraft with HTML. */
  { kind: "draft"; rich: boolean } | { kind: "edit"; messages: number[]; chunks: string[] };

type Edited = Extract<Shown, { kind: "edit" }>;

/** An edit of a message that is no longer there (the user deleted it). */
const GONE = /message to edit not found|MESSAGE_ID_INVALID/i;

const inThread = (threadId: number | undefined) =>
  threadId === undefined ? {} : { message_thread_id: threadId };

/** A frame as Telegram HTML: the answer rendered, the status in italics after it. */
function frameHtml({ markdown, status }: Frame): string {
  if (status === undefined) return renderMarkdown(markdown);
  const note = `<i>${escapeHtml(status)}</i>`;
  return markdown.trim() === "" ? note : `${renderMarkdown(markdown)}\n\n${note}`;
}

/** The part of a long answer a draft can show: its last message's worth, where it is growing. */
const draftHtml = (frame: Frame): string => htmlChunks(frameHtml(frame)).at(-1) ?? "";

/** Shows a Telegram answer while the model writes it: as a draft, or as a message edited in place. */
export function startLiveAnswer(deps: LiveAnswerDeps): LiveAnswer {
  const { api, delivery, chatId, threadId } = deps;
  const drafts = deps.mode === "auto" || deps.mode === "draft";
  const shownBefore = deps.shownBefore ?? [];
  let shown: Shown | undefined =
    shownBefore.length > 0
      ? { kind: "edit", messages: [...shownBefore], chunks: [] }
      : deps.mode === "off"
        ? undefined
        : drafts && deps.privateChat
          ? { kind: "draft", rich: delivery.richWanted() }
          : edits();
  const interval = () =>
    Math.max(
      shown?.kind === "draft"
        ? (deps.draftIntervalMs ?? DRAFT_INTERVAL_MS)
        : (deps.editIntervalMs ?? EDIT_INTERVAL_MS),
      deps.pacer?.spacingMs() ?? 0,
    );
  const leavePacer = shown === undefined ? undefined : deps.pacer?.join();

  function edits(): Shown | undefined {
    return deps.mode === "draft" ? undefined : { kind: "edit", messages: [], chunks: [] };
  }

  /** What to show next; rendered only when it is sent, as most frames are replaced before then. */
  let wanted: Frame | undefined;
  /** The frame being sent, and the last one Telegram took (a draft not growing is shown again). */
  let sending: Frame | undefined;
  let lastFrame: Frame = { markdown: "" };
  /** The last HTML edited in: an edit of the same text is not sent. */
  let lastEdit = "";
  let busy: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let nextAt = 0;
  let closed = false;
  const requests = new AbortController();
  const signal = requests.signal as unknown as Parameters<Api["sendMessageDraft"]>[4];

  function show(frame: Frame): void {
    if (closed || shown === undefined) return;
    wanted = frame;
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
    const frame = wanted;
    wanted = undefined;
    const send = request(frame);
    if (send === undefined) return;
    sending = frame;
    nextAt = Date.now() + interval();
    busy = send()
      .then(() => {
        lastFrame = frame;
      })
      .catch(failed)
      .finally(() => {
        busy = undefined;
        sending = undefined;
        pump();
      });
  }

  /** How to show a frame now; undefined when that would change nothing (the same edit again). */
  function request(frame: Frame): (() => Promise<void>) | undefined {
    if (shown?.kind === "draft") {
      const { rich } = shown;
      return () => sendDraft(frame, rich);
    }
    if (shown?.kind !== "edit") return undefined;
    const into = shown;
    const html = frameHtml(frame);
    if (html === lastEdit) return undefined;
    return async () => {
      await showInMessages(into, html === "" ? [] : htmlChunks(html));
      lastEdit = html;
    };
  }

  async function sendDraft(frame: Frame, rich: boolean): Promise<void> {
    const options = { can_stop: true, ...inThread(threadId) };
    const richHtml = rich ? richDraftHtml(frame.markdown, frame.status) : undefined;
    // A rich draft must show something; an empty text draft shows "Thinking…".
    if (richHtml !== undefined) {
      await api.sendRichMessageDraft(chatId, deps.draftId, { html: richHtml }, options, signal);
    } else {
      const html = draftHtml(frame);
      await api.sendMessageDraft(
        chatId,
        deps.draftId,
        html,
        { parse_mode: "HTML", ...options },
        signal,
      );
    }
    scheduleRefresh();
  }

  /** Edits the messages that changed from `from` on, and sends the ones the answer grew into. */
  async function showInMessages(into: Edited, chunks: readonly string[], from = 0): Promise<void> {
    for (const [i, chunk] of chunks.entries()) {
      const at = from + i;
      if (into.chunks[at] === chunk && into.messages[at] !== undefined) continue;
      await showAt(
        into,
        at,
        (id) => delivery.editChunk(chatId, id, chunk),
        (record) => delivery.sendChunk(chatId, chunk, threadId, record),
      );
      into.chunks[at] = chunk;
    }
  }

  /**
   * Shows the `at`-th message of the answer: edits it, or sends it when the answer grew into it
   * or the message is gone (the user deleted it); a message sent is recorded as Telegram takes
   * it, on the courier's thread (an edit needs no record: a later run edits the same message).
   */
  async function showAt(
    into: Edited,
    at: number,
    edit: (id: number) => Promise<void>,
    send: (record: CourierRecord | undefined) => Promise<Carried<number>>,
  ): Promise<void> {
    const id = into.messages[at];
    if (id !== undefined) {
      try {
        return await edit(id);
      } catch (error) {
        if (!(error instanceof GrammyError && GONE.test(error.description))) throw error;
      }
    }
    const ids = Array.from({ length: Math.max(into.messages.length, at + 1) }, (_, i) =>
      i === at ? null : (into.messages[i] ?? null),
    );
    const { value, rows } = await send(deps.messagesStatement?.(ids));
    into.messages[at] = value;
    await recordMessages(into, rows);
  }

  /**
   * A crash after a message went out but before this record would show the answer twice; the
   * database away costs only that protection, while a lost lease stops the run.
   */
  async function recordMessages(into: Edited, rows?: number): Promise<void> {
    await deps.recordMessages?.([...into.messages], rows).catch((error: unknown) => {
      if (error instanceof LeaseLostError) throw error;
      deps.logger.warn(
        { err: error, chat_id: chatId },
        "could not record the messages an answer is shown in",
      );
    });
  }

  /** Messages a longer draft of the answer needed and the finished one does not (after a restart). */
  async function dropExtraMessages(into: Edited, keep: number) {
    if (into.messages.length <= keep) return;
    const extra = into.messages.splice(keep);
    into.chunks.splice(keep);
    // Recorded first: a later run must not edit a message that is gone.
    await recordMessages(into);
    for (const id of extra) {
      await api.deleteMessage(chatId, id).catch((error: unknown) => {
        deps.logger.warn({ err: error, chat_id: chatId }, "could not delete a message left over");
      });
    }
  }

  /**
   * The finished answer in the messages shown while it was written: rich messages when they are
   * on (the first ones edited, further ones sent), and from the first Telegram refuses on, the
   * rest as HTML; else HTML, as the live view showed it.
   */
  async function finishInMessages(into: Edited, markdown: string): Promise<void> {
    const rich = delivery.richWanted() ? renderRichMessages(markdown) : [];
    for (const [i, chunk] of rich.entries()) {
      try {
        await showAt(
          into,
          i,
          (id) => delivery.editRich(chatId, id, chunk.html),
          (record) => delivery.sendRichChunk(chatId, chunk.html, threadId, record),
        );
        into.chunks[i] = chunk.html;
      } catch (error) {
        if (!delivery.richRefused(error)) throw error;
        deps.logger.warn(
          { err: error, chat_id: chatId },
          "Telegram refused the rich answer; showing the rest as HTML",
        );
        const rest = htmlChunks(
          rich
            .slice(i)
            .map((c) => c.fallbackHtml)
            .join("\n\n"),
        );
        await showInMessages(into, rest, i);
        return dropExtraMessages(into, i + rest.length);
      }
    }
    if (rich.length > 0) return dropExtraMessages(into, rich.length);
    const chunks = htmlChunks(renderMarkdown(markdown));
    await showInMessages(into, chunks);
    await dropExtraMessages(into, chunks.length);
  }

  let refresh: NodeJS.Timeout | undefined;
  function scheduleRefresh(): void {
    clearTimeout(refresh);
    refresh = setTimeout(() => show(lastFrame), DRAFT_REFRESH_MS);
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
    if (shown?.kind === "draft" && shown.rich && delivery.richRefused(error)) {
      deps.logger.info(
        { chat_id: chatId, err: error.description },
        "rich drafts refused; drafting in HTML instead",
      );
      shown = { kind: "draft", rich: false };
      showAgain();
      return;
    }
    if (shown?.kind === "draft" && error instanceof GrammyError && error.error_code === 400) {
      // Drafts refused here (not a private chat after all, an older client): edit in place.
      deps.logger.info(
        { chat_id: chatId, err: error.description },
        "drafts refused; editing a message instead",
      );
      shown = edits();
      showAgain();
      return;
    }
    // Only the live view suffers; the finished answer is sent on its own.
    deps.logger.warn({ err: error, chat_id: chatId }, "could not update the live answer");
  }

  /** After a switch of how it is shown: the refused frame again at once, unless a newer waits. */
  function showAgain(): void {
    nextAt = 0;
    wanted ??= sending;
  }

  async function close(): Promise<void> {
    closed = true;
    leavePacer?.();
    clearTimeout(timer);
    clearTimeout(refresh);
    requests.abort();
    await busy;
  }

  let round = "";
  const status = (line: string) => show({ markdown: round, status: line });
  const progress: TurnProgress = {
    text(text) {
      round = text;
      show({ markdown: text });
    },
    restart() {
      round = "";
      show({ markdown: "" });
    },
    tool(name, args) {
      status(toolStatus(name, args));
    },
  };

  /** The status alone, drafted after the answer's message; a message sent takes its place. */
  function statusDrafts(line: string): AfterView {
    let view: LiveAnswer | undefined;
    return {
      showing: true,
      again() {
        if (view) return;
        // A view of its own, which never edits the answer's messages nor records any of its own.
        view = startLiveAnswer({
          ...deps,
          mode: "draft",
          shownBefore: undefined,
          recordMessages: undefined,
          messagesStatement: undefined,
        });
        view.status(line);
      },
      async quiet() {
        const ending = view;
        view = undefined;
        await ending?.close();
      },
    };
  }

  return {
    progress,
    get showing() {
      return shown !== undefined;
    },
    get words() {
      return shown === undefined ? "" : round;
    },
    status,
    close,
    async finish(markdown, deliveryProgress, after) {
      const live = shown;
      await close();
      if (live?.kind === "edit" && (live.messages.length > 0 || after)) {
        if (after) {
          await showInMessages(live, htmlChunks(frameHtml({ markdown, status: after.status })));
          // A failure leaves the status in place: the update's next run settles the messages.
          await after.run(IN_MESSAGES);
        }
        await finishInMessages(live, markdown);
        return;
      }
      await delivery.sendMarkdown(chatId, markdown, threadId, deliveryProgress);
      if (!after) return;
      if (live?.kind !== "draft") return after.run(NOT_SHOWN);
      const drafts = statusDrafts(after.status);
      drafts.again();
      try {
        await after.run(drafts);
      } finally {
        await drafts.quiet();
      }
    },
  };
}
