import type { Api } from "grammy";
import { GrammyError } from "grammy";
import type { TurnProgress } from "../agent/turn.js";
import type { StreamingMode } from "../config.js";
import type { Logger } from "../logger.js";
import { toolStatus } from "../tools/status.js";
import type { CourierRecord } from "./courier.js";
import type { Delivery, DeliveryProgress } from "./delivery.js";
import { draftView } from "./draft-view.js";
import { editView } from "./edit-view.js";
import { LatestWins } from "./latest-wins.js";
import type { LivePacer } from "./live-pacer.js";
import type { Frame, LiveView } from "./live-view.js";

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
  /** After a draft went out, when it is shown again unless a newer one followed (DRAFT_REFRESH_MS). */
  draftRefreshMs?: number;
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

/**
 * Shows a Telegram answer while the model writes it: as a draft, or as a message edited in place
 * (draft-view.ts, edit-view.ts). Frames go out one at a time, the newest waiting one first, as
 * often as the view and the process's shared pace allow; a view Telegram refuses gives way to
 * the one that replaces it.
 */
export function startLiveAnswer(deps: LiveAnswerDeps): LiveAnswer {
  const { delivery, chatId, threadId } = deps;
  const requests = new AbortController();
  const viewDeps = { ...deps, threadId };
  const edits = () =>
    deps.mode === "draft" ? undefined : editView({ ...viewDeps, intervalMs: deps.editIntervalMs });
  const drafts = deps.mode === "auto" || deps.mode === "draft";
  const shownBefore = deps.shownBefore ?? [];
  let view: LiveView | undefined =
    shownBefore.length > 0
      ? editView({ ...viewDeps, intervalMs: deps.editIntervalMs }, shownBefore)
      : deps.mode === "off"
        ? undefined
        : drafts && deps.privateChat
          ? draftView(
              {
                ...viewDeps,
                intervalMs: deps.draftIntervalMs,
                signal: requests.signal,
                drafted: scheduleRefresh,
                instead: edits,
              },
              delivery.richWanted(),
            )
          : edits();
  const leavePacer = view === undefined ? undefined : deps.pacer?.join();
  /** The last frame Telegram took (a draft not growing is shown again). */
  let lastFrame: Frame = { markdown: "" };
  const frames = new LatestWins<Frame>({
    send: (frame) => view?.request(frame),
    intervalMs: () => Math.max(view?.intervalMs ?? 0, deps.pacer?.spacingMs() ?? 0),
    sent(frame) {
      lastFrame = frame;
    },
    failed,
  });

  function show(frame: Frame): void {
    if (view !== undefined) frames.offer(frame);
  }

  let refresh: NodeJS.Timeout | undefined;
  let closed = false;
  function scheduleRefresh(): void {
    // A draft Telegram took while the answer was closing must not arm the timer again: it would
    // keep the whole answer in memory for the refresh's 20 s after it ended.
    if (closed) return;
    clearTimeout(refresh);
    refresh = setTimeout(() => show(lastFrame), deps.draftRefreshMs ?? DRAFT_REFRESH_MS);
    refresh.unref();
  }

  function failed(error: unknown): void {
    if (error instanceof GrammyError && error.error_code === 429) {
      frames.holdFor((error.parameters.retry_after ?? 1) * 1000);
      deps.logger.warn(
        { chat_id: chatId, retry_after: error.parameters.retry_after },
        "live answer throttled by Telegram",
      );
      return;
    }
    const replaced = view?.replacedAfter(error);
    if (replaced) {
      view = replaced.by;
      // The refused frame again at once, unless a newer one waits.
      frames.again();
      return;
    }
    // Only the live view suffers; the finished answer is sent on its own.
    deps.logger.warn({ err: error, chat_id: chatId }, "could not update the live answer");
  }

  async function close(): Promise<void> {
    closed = true;
    const ended = frames.close();
    leavePacer?.();
    clearTimeout(refresh);
    requests.abort();
    await ended;
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
    let drafting: LiveAnswer | undefined;
    return {
      showing: true,
      again() {
        if (drafting) return;
        // A view of its own, which never edits the answer's messages nor records any of its own.
        drafting = startLiveAnswer({
          ...deps,
          mode: "draft",
          shownBefore: undefined,
          recordMessages: undefined,
          messagesStatement: undefined,
        });
        drafting.status(line);
      },
      async quiet() {
        const ending = drafting;
        drafting = undefined;
        await ending?.close();
      },
    };
  }

  return {
    progress,
    get showing() {
      return view !== undefined;
    },
    get words() {
      return view === undefined ? "" : round;
    },
    status,
    close,
    async finish(markdown, deliveryProgress, after) {
      const live = view;
      await close();
      if (live?.kind === "edit" && (live.shownInMessages || after)) {
        if (after) {
          await live.show({ markdown, status: after.status });
          // A failure leaves the status in place: the update's next run settles the messages.
          await after.run(IN_MESSAGES);
        }
        await live.finish(markdown);
        return;
      }
      await delivery.sendMarkdown(chatId, markdown, threadId, deliveryProgress);
      if (!after) return;
      if (live?.kind !== "draft") return after.run(NOT_SHOWN);
      const drafting = statusDrafts(after.status);
      drafting.again();
      try {
        await after.run(drafting);
      } finally {
        await drafting.quiet();
      }
    },
  };
}
