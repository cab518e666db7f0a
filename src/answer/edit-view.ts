import { GrammyError } from "grammy";
import { LeaseLostError } from "../queue/inbox.js";
import { renderMarkdown } from "../render/markdown-html.js";
import { renderRichMessages } from "../render/rich/render.js";
import type { Carried, CourierRecord } from "./courier.js";
import { htmlChunks } from "./delivery.js";
import { type Frame, frameHtml, type Replacement, type ViewDeps } from "./live-view.js";

/** Between two edits of one message: groups allow a bot about 20 messages a minute. */
export const EDIT_INTERVAL_MS = 1_500;

/** An edit of a message that is no longer there (the user deleted it). */
const GONE = /message to edit not found|MESSAGE_ID_INVALID/i;

export type EditViewDeps = ViewDeps & {
  intervalMs?: number;
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

export type EditView = ReturnType<typeof editView>;

/**
 * The answer in messages edited in place as it grows, more sent as it outgrows one; `shownBefore`
 * are the messages an earlier run of the update showed it in, which this one edits again.
 */
export function editView(deps: EditViewDeps, shownBefore: readonly number[] = []) {
  const { delivery, chatId, threadId } = deps;
  const messages = [...shownBefore];
  const chunks: string[] = [];
  /** The last HTML edited in: an edit of the same text is not sent. */
  let lastEdit = "";

  /** Edits the messages that changed from `from` on, and sends the ones the answer grew into. */
  async function showChunks(html: readonly string[], from = 0): Promise<void> {
    for (const [i, chunk] of html.entries()) {
      const at = from + i;
      if (chunks[at] === chunk && messages[at] !== undefined) continue;
      await showAt(
        at,
        (id) => delivery.editChunk(chatId, id, chunk),
        (record) => delivery.sendChunk(chatId, chunk, threadId, record),
      );
      chunks[at] = chunk;
    }
  }

  /**
   * Shows the `at`-th message of the answer: edits it, or sends it when the answer grew into it
   * or the message is gone (the user deleted it); a message sent is recorded as Telegram takes
   * it, on the courier's thread (an edit needs no record: a later run edits the same message).
   */
  async function showAt(
    at: number,
    edit: (id: number) => Promise<void>,
    send: (record: CourierRecord | undefined) => Promise<Carried<number>>,
  ): Promise<void> {
    const id = messages[at];
    if (id !== undefined) {
      try {
        return await edit(id);
      } catch (error) {
        if (!(error instanceof GrammyError && GONE.test(error.description))) throw error;
      }
    }
    const ids = Array.from({ length: Math.max(messages.length, at + 1) }, (_, i) =>
      i === at ? null : (messages[i] ?? null),
    );
    const { value, rows } = await send(deps.messagesStatement?.(ids));
    messages[at] = value;
    await recordMessages(rows);
  }

  /**
   * A crash after a message went out but before this record would show the answer twice; the
   * database away costs only that protection, while a lost lease stops the run.
   */
  async function recordMessages(rows?: number): Promise<void> {
    await deps.recordMessages?.([...messages], rows).catch((error: unknown) => {
      if (error instanceof LeaseLostError) throw error;
      deps.logger.warn(
        { err: error, chat_id: chatId },
        "could not record the messages an answer is shown in",
      );
    });
  }

  /** Messages a longer draft of the answer needed and the finished one does not (after a restart). */
  async function dropExtraMessages(keep: number) {
    if (messages.length <= keep) return;
    const extra = messages.splice(keep);
    chunks.splice(keep);
    // Recorded first: a later run must not edit a message that is gone.
    await recordMessages();
    for (const id of extra) {
      await deps.api.deleteMessage(chatId, id).catch((error: unknown) => {
        deps.logger.warn({ err: error, chat_id: chatId }, "could not delete a message left over");
      });
    }
  }

  return {
    kind: "edit" as const,
    intervalMs: deps.intervalMs ?? EDIT_INTERVAL_MS,
    /** Whether the answer is shown in a message yet. */
    get shownInMessages() {
      return messages.length > 0;
    },
    /** How to show a frame now; undefined when that would change nothing (the same edit again). */
    request(frame: Frame): (() => Promise<void>) | undefined {
      const html = frameHtml(frame);
      if (html === lastEdit) return undefined;
      return async () => {
        await showChunks(html === "" ? [] : htmlChunks(html));
        lastEdit = html;
      };
    },
    /** An edit refused is no reason to show the answer otherwise. */
    replacedAfter: (_error: unknown): Replacement | undefined => undefined,
    /** Shows a frame at once, outside the pace of the live updates (the live view has ended). */
    show: (frame: Frame) => showChunks(htmlChunks(frameHtml(frame))),
    /**
     * The finished answer in the messages shown while it was written: rich messages when they
     * are on (the first ones edited, further ones sent), and from the first Telegram refuses on,
     * the rest as HTML; else HTML, as the live view showed it.
     */
    async finish(markdown: string): Promise<void> {
      const rich = delivery.richWanted() ? renderRichMessages(markdown) : [];
      for (const [i, chunk] of rich.entries()) {
        try {
          await showAt(
            i,
            (id) => delivery.editRich(chatId, id, chunk.html),
            (record) => delivery.sendRichChunk(chatId, chunk.html, threadId, record),
          );
          chunks[i] = chunk.html;
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
          await showChunks(rest, i);
          return dropExtraMessages(i + rest.length);
        }
      }
      if (rich.length > 0) return dropExtraMessages(rich.length);
      const html = htmlChunks(renderMarkdown(markdown));
      await showChunks(html);
      await dropExtraMessages(html.length);
    },
  };
}
