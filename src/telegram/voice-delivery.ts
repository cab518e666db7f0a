import type { Logger } from "../logger.js";
import { type Lease, LeaseLostError } from "../queue/inbox.js";
import { escapeHtml } from "../render/markdown-html.js";
import type { VoiceReplies } from "../voice/voice-reply.js";
import { voiceNotesSent } from "../voice/voice-reply.js";
import type { Delivery, DeliveryProgress } from "./delivery.js";

/**
 * Speaks a delivered answer into its chat and topic: "recording a voice message…" shows while
 * Gemini speaks, and each voice note (and a failure's one notice) is recorded in the update's
 * inbox row by the courier as Telegram takes it, so a run after a crash sends only the rest.
 */
export async function deliverVoice(args: {
  replies: VoiceReplies;
  delivery: Delivery;
  conversation: string;
  chatId: number;
  threadId: number | undefined;
  text: string;
  resumed: boolean;
  stop?: AbortSignal;
  lease?: Pick<Lease, "delivered" | "recordDelivered" | "deliveredStatement"> | undefined;
  logger: Logger;
}): Promise<void> {
  const { delivery, chatId, threadId, lease } = args;
  // As for an answer's messages (delivery.ts): a record is a head start on the update's own
  // end, and only a lost lease stops the run.
  const record = async (after: number, rows: number | undefined) => {
    try {
      await lease?.recordDelivered(after, rows);
    } catch (error) {
      if (error instanceof LeaseLostError) throw error;
      args.logger.warn(
        { err: error, chat_id: args.conversation, delivered: after },
        "could not record a voice note Telegram accepted; the update's end records it",
      );
    }
  };
  const stopRecording = delivery.showTyping(chatId, threadId, "record_voice");
  try {
    await args.replies.reply({
      chatId: args.conversation,
      text: args.text,
      ...(args.stop ? { stop: args.stop } : {}),
      alreadySent: args.resumed && lease ? voiceNotesSent(lease.delivered) : 0,
      async send(voice, after) {
        const statement = lease?.deliveredStatement(after);
        const { rows } = await delivery.sendVoice(chatId, voice, threadId, statement);
        await record(after, rows);
      },
      async tellFailure(text, after) {
        const progress: DeliveryProgress | undefined = lease && {
          alreadySent: 0,
          sent: (_count, rows) => record(after, rows),
          statement: () => lease.deliveredStatement(after),
        };
        await delivery.sendHtml(chatId, escapeHtml(text), threadId, progress);
      },
    });
  } finally {
    stopRecording();
  }
}
