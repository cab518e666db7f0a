import type { Update } from "grammy/types";
import type { FileRef } from "../test/fakes/telegram.js";
import { buildTextUpdate } from "../test/fakes/telegram-objects.js";
import type { Fakes, TelegramArrival } from "./fakes.js";
import { WEBHOOK_SECRET } from "./service-process.js";
import { createWebhookPoster } from "./webhook-poster.js";

/** The fake Gemini's default answer, rendered to Telegram HTML (plain words stay as they are). */
const EXPECTED_ANSWER = "ok";
const ANSWER_TIMEOUT_MS = 30_000;

export type ChatDriverOptions = {
  /** The answer's text as it reaches sendMessage (plain words stay as they are in HTML). */
  expectedAnswer?: string;
  /** How long a turn may wait for its answer before it counts as dropped. */
  answerTimeoutMs?: number;
};
// Telegram itself keeps up to 40 webhook connections open to one bot.
const MAX_SOCKETS = 40;

export type DriverCounts = {
  answered: number;
  /** sendMessage calls for a chat that had no turn waiting: duplicates or strays. */
  unexpected: number;
  /** Answers other than the fake Gemini's "ok": the turn failed and the user got an apology. */
  wrongText: number;
};

export type ChatDriver = {
  /**
   * Posts a text message from user `chatId` in its private chat to the webhook and waits for the
   * answer to reach the fake Telegram. With `photo` (a file of the fake Telegram) the message is
   * that photo with the text as its caption. Returns the latency: from just before the POST to
   * the answer's arrival, in ms.
   */
  turn(chatId: number, photo?: FileRef): Promise<number>;
  readonly counts: Readonly<DriverCounts>;
  close(): void;
};

/** The text message as a photo message: the text becomes the caption, as Telegram sends it. */
function withPhoto(update: Update, photo: FileRef): Update {
  if (!update.message?.text) throw new Error("expected a text message to turn into a photo");
  const { text, entities: _, ...message } = update.message;
  return {
    ...update,
    message: { ...message, caption: text, photo: [{ ...photo, width: 1280, height: 960 }] },
  };
}

type Waiting = { resolve(arrival: TelegramArrival): void; timer: NodeJS.Timeout };

/** Plays Telegram (webhook POSTs) and the users, one turn at a time per chat. */
export function createChatDriver(
  fakes: Fakes,
  baseUrl: string,
  options: ChatDriverOptions = {},
): ChatDriver {
  const expectedAnswer = options.expectedAnswer ?? EXPECTED_ANSWER;
  const answerTimeoutMs = options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  const poster = createWebhookPoster({ baseUrl, secret: WEBHOOK_SECRET, maxSockets: MAX_SOCKETS });
  const waiting = new Map<number, Waiting>();
  const counts: DriverCounts = { answered: 0, unexpected: 0, wrongText: 0 };
  let updateId = 0;

  const unsubscribe = fakes.onArrival((arrival) => {
    if (arrival.method.toLowerCase() !== "sendmessage") return;
    const turn = arrival.chatId === undefined ? undefined : waiting.get(arrival.chatId);
    if (!turn || arrival.chatId === undefined) {
      counts.unexpected++;
      return;
    }
    waiting.delete(arrival.chatId);
    clearTimeout(turn.timer);
    counts.answered++;
    if (arrival.text !== expectedAnswer) counts.wrongText++;
    turn.resolve(arrival);
  });

  const expectAnswer = (chatId: number) => {
    if (waiting.has(chatId)) throw new Error(`chat ${chatId} already has a turn waiting`);
    let cancel = () => {};
    const answer = new Promise<TelegramArrival>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(chatId);
        reject(
          new Error(
            `no answer for chat ${chatId} within ${answerTimeoutMs} ms: the service dropped or stalled the update`,
          ),
        );
      }, answerTimeoutMs);
      waiting.set(chatId, { resolve, timer });
      cancel = () => {
        clearTimeout(timer);
        waiting.delete(chatId);
      };
    });
    return { answer, cancel };
  };

  return {
    counts,
    async turn(chatId, photo) {
      const id = ++updateId;
      const update = buildTextUpdate({
        updateId: id,
        messageId: id,
        userId: chatId,
        text: `Message ${id}: what did we talk about last time?`,
      });
      const body = JSON.stringify(photo ? withPhoto(update, photo) : update);
      const { answer, cancel } = expectAnswer(chatId);
      const start = performance.now();
      const posted = poster.post(body).catch((error: unknown) => {
        cancel();
        throw error;
      });
      // Awaited together: the answer often arrives before the webhook's 200 does.
      const [, arrival] = await Promise.all([posted, answer]);
      return arrival.at - start;
    },
    close() {
      unsubscribe();
      poster.close();
    },
  };
}
