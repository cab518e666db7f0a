import type { ReadAttachments } from "../agent/request-media.js";
import { STOPPED_EMPTY, type TurnResult } from "../agent/turn.js";
import type { Approval } from "../approvals/store.js";
import type { Lease } from "../queue/inbox.js";
import type { MediaPart } from "../session/events.js";
import type { Delivery } from "./delivery.js";
import {
  type AfterAnswer,
  type LiveAnswer,
  type LiveAnswerDeps,
  NOT_SHOWN,
} from "./live-answer.js";
import type { OutgoingFile } from "./outgoing-files.js";

/** Files as Telegram uploads, read from the database; one cleared meanwhile, or empty, is left out. */
export async function outgoingFiles(
  parts: readonly MediaPart[],
  read: ReadAttachments,
): Promise<OutgoingFile[]> {
  if (parts.length === 0) return [];
  const bytes = await read(parts.map((part) => part.sha256));
  return parts.flatMap((part) => {
    const data = bytes.get(part.sha256);
    if (!data || data.byteLength === 0) return [];
    return [
      {
        bytes: data,
        name: part.name ?? `file-${part.sha256.slice(0, 12)}`,
        mimeType: part.mimeType,
      },
    ];
  });
}

/**
 * What a live answer keeps in a lease: the messages an earlier run showed the answer in, and the
 * records of those it sends (made by the courier as Telegram takes each one).
 */
export function liveMessagesOf(
  lease: Pick<Lease, "liveMessages" | "recordLiveMessages" | "liveMessagesStatement">,
): Pick<LiveAnswerDeps, "shownBefore" | "recordMessages" | "messagesStatement"> {
  return {
    shownBefore: lease.liveMessages,
    recordMessages: (ids, rows) => lease.recordLiveMessages(ids, rows),
    messagesStatement: (ids) => lease.liveMessagesStatement(ids),
  };
}

/**
 * The words of the finished answer's message. A stop before the model call being written had
 * any words leaves the live view showing those of the call before it (beside the status of the
 * tool that ran): the message keeps them, where "(stopped)" would take away what the user saw.
 * They are stored with that call's event already, so the stopped event is not given them again.
 */
function messageText(result: Pick<TurnResult, "text" | "stopped">, shown: string): string {
  return result.stopped && result.text === STOPPED_EMPTY && shown !== "" ? shown : result.text;
}

/**
 * Sends a finished answer: the files the model made first, then its words (the live view stops
 * first, so that no draft comes after them). Each file and each message is recorded in the lease
 * as Telegram takes it, files before words, so a run after a crash sends only the rest. `after`
 * (speaking the answer) runs once the words are out, shown in the live view.
 */
export async function deliverAnswer(args: {
  live: LiveAnswer;
  delivery: Delivery;
  read: ReadAttachments;
  chatId: number;
  threadId: number | undefined;
  result: Pick<TurnResult, "text" | "files" | "resumed" | "stopped">;
  lease: Pick<Lease, "delivered" | "recordDelivered" | "deliveredStatement">;
  after?: AfterAnswer | undefined;
  /** False when the turn waits with no words before its calls: its files go out alone. */
  words?: boolean;
}): Promise<void> {
  const { live, lease, result } = args;
  const files = await outgoingFiles(result.files, args.read);
  const done = result.resumed ? lease.delivered : 0;
  const from = (offset: number) => ({
    alreadySent: Math.max(0, done - offset),
    sent: (count: number, rows?: number) => lease.recordDelivered(offset + count, rows),
    statement: (count: number) => lease.deliveredStatement(offset + count),
  });
  if (files.length > 0) {
    await live.close();
    await args.delivery.sendFiles(args.chatId, files, args.threadId, from(0));
  }
  const words = messageText(result, live.words);
  // Files with no words (a drawn picture alone) need no "(no answer)" after them.
  if (args.words === false || (words.trim() === "" && files.length > 0)) return live.close();
  await live.finish(words, from(files.length), args.after);
}

/**
 * Delivers what a turn ended with: its answer (and what comes `after` it, its voice notes); or,
 * when it waits for approvals, the words before the calls and the requests with their buttons,
 * what comes after the words only then, so as not to hold the buttons up; or nothing (a resume
 * that found nothing to do).
 */
export async function deliverTurnResult(
  args: Parameters<typeof deliverAnswer>[0] & {
    result: Pick<TurnResult, "waiting" | "idle">;
    sendRequests?: (pending: readonly Approval[]) => Promise<void>;
  },
): Promise<void> {
  const { result, live } = args;
  if (result.idle) return live.close();
  if (!result.waiting) return deliverAnswer(args);
  await deliverAnswer({ ...args, after: undefined, words: result.text.trim() !== "" });
  await args.sendRequests?.(result.waiting);
  // The words before the calls are spoken once their buttons are out.
  await args.after?.run(NOT_SHOWN);
}
