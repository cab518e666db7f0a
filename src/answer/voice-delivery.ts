import type { Logger } from "../logger.js";
import { type Lease, LeaseLostError } from "../queue/inbox.js";
import { escapeHtml } from "../render/markdown-html.js";
import type { VoiceReplies } from "../voice/voice-reply.js";
import { partsToSpeak, voiceNotesSent } from "../voice/voice-reply.js";
import type { VoiceSettings } from "../voice/voice-settings.js";
import type { Delivery, DeliveryProgress } from "./delivery.js";
import type { AfterAnswer, AfterView } from "./live-answer.js";

/** Spoken replies (VOICE_REPLIES, /voice); none: text only. */
export type ConversationVoice = { replies: VoiceReplies; settings: VoiceSettings };

/** What the live answer says while its voice notes are made. */
export const RECORDING_STATUS = "🎙 recording…";

export type VoiceDelivery = {
  replies: VoiceReplies;
  delivery: Delivery;
  conversation: string;
  chatId: number;
  threadId: number | undefined;
  /** The answer as the model wrote it. */
  text: string;
  /** The answer was stored by an earlier run of the update, which may have sent notes of it. */
  resumed: boolean;
  stop?: AbortSignal;
  lease: Pick<Lease, "delivered" | "recordDelivered" | "deliveredStatement" | "ensureHeld">;
  logger: Logger;
};

/**
 * The voice notes of a delivered answer, for deliverAnswer's `after`: "🎙 recording…" shows in
 * the live answer while they are made. Undefined when the answer has no words to say.
 */
export function speakAfter(args: VoiceDelivery): AfterAnswer | undefined {
  if (partsToSpeak(args.text).length === 0) return undefined;
  return { status: RECORDING_STATUS, run: (view) => deliverVoice({ ...args, view }) };
}

/**
 * Speaks a delivered answer into its chat and topic. Each voice note (and a failure's one notice)
 * is recorded in the update's inbox row by the courier as Telegram takes it, so a run after a
 * crash sends only the rest. Where the live view cannot show that a note is being made,
 * "recording a voice message…" does.
 */
async function deliverVoice(args: VoiceDelivery & { view: AfterView }): Promise<void> {
  const { delivery, chatId, threadId, lease, view } = args;
  // Speech costs: not for a run that lost its update to another.
  await lease.ensureHeld();
  // As for an answer's messages (delivery.ts): a record is a head start on the update's own
  // end, and only a lost lease stops the run.
  const record = async (after: number, rows: number | undefined) => {
    try {
      await lease.recordDelivered(after, rows);
    } catch (error) {
      if (error instanceof LeaseLostError) throw error;
      args.logger.warn(
        { err: error, chat_id: args.conversation, delivered: after },
        "could not record a voice note Telegram accepted; the update's end records it",
      );
    }
  };
  const stopRecording = view.showing
    ? () => {}
    : delivery.showTyping(chatId, threadId, "record_voice");
  try {
    await args.replies.reply({
      chatId: args.conversation,
      text: args.text,
      ...(args.stop ? { stop: args.stop } : {}),
      alreadySent: args.resumed ? voiceNotesSent(lease.delivered) : 0,
      recording: () => view.again(),
      async send(voice, after) {
        await view.quiet();
        const statement = lease.deliveredStatement(after);
        const { rows } = await delivery.sendVoice(chatId, voice, threadId, statement);
        await record(after, rows);
      },
      async tellFailure(text, after) {
        await view.quiet();
        const progress: DeliveryProgress = {
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
