import { type Api, GrammyError } from "grammy";
import { richDraftHtml } from "../render/rich/render.js";
import { shownChunks } from "./delivery.js";
import { type Frame, frameHtml, inThread, type Replacement, type ViewDeps } from "./live-view.js";

/**
 * Between two drafts of one chat: four a second, under the five Telegram allows, so that a draft
 * retried after a network hiccup does not push a chat over.
 */
export const DRAFT_INTERVAL_MS = 250;

export type DraftViewDeps = ViewDeps & {
  /** Non-zero, the same for every run of one update (the stop button names it). */
  draftId: number;
  intervalMs?: number;
  /** Aborts a draft on its way (the answer is done). */
  signal: AbortSignal;
  /** A draft went out (one not growing must be shown again before it disappears). */
  drafted(): void;
  /** What shows once drafts are refused here: messages edited in place, or nothing. */
  instead(): Replacement["by"];
};

export type DraftView = ReturnType<typeof draftView>;

/**
 * The part of a long answer a draft can show: its last message's worth, where it is growing.
 * Empty when nothing shows yet (a stream that started over): Telegram then shows "Thinking…".
 */
const draftHtml = (frame: Frame): string => shownChunks(frameHtml(frame)).at(-1) ?? "";

/**
 * The answer as a draft, with the stop button: rich (sendRichMessageDraft) or HTML
 * (sendMessageDraft). A rich draft refused drafts in HTML; a draft refused outright (not a private
 * chat after all, an older client) gives way to `instead`.
 */
export function draftView(deps: DraftViewDeps, rich: boolean) {
  const { api, chatId } = deps;
  const signal = deps.signal as unknown as Parameters<Api["sendMessageDraft"]>[4];

  async function sendDraft(frame: Frame): Promise<void> {
    const options = { can_stop: true, ...inThread(deps.threadId) };
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
    deps.drafted();
  }

  return {
    kind: "draft" as const,
    intervalMs: deps.intervalMs ?? DRAFT_INTERVAL_MS,
    request: (frame: Frame) => () => sendDraft(frame),
    replacedAfter(error: unknown): Replacement | undefined {
      if (rich && deps.delivery.richRefused(error)) {
        deps.logger.info(
          { chat_id: chatId, err: error.description },
          "rich drafts refused; drafting in HTML instead",
        );
        return { by: draftView(deps, false) };
      }
      if (error instanceof GrammyError && error.error_code === 400) {
        deps.logger.info(
          { chat_id: chatId, err: error.description },
          "drafts refused; editing a message instead",
        );
        return { by: deps.instead() };
      }
      return undefined;
    },
  };
}
