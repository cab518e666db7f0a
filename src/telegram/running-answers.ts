/**
 * The answers this process is writing, so that a stop can reach them. A stop cannot wait its turn
 * in the inbox (which runs one update per conversation at a time, behind the very answer it
 * stops), so the ingest handles it as it arrives and signals the running turn here.
 *
 * In-process only: with several replicas behind one webhook, a stop must reach the replica that
 * runs the answer (docs/streaming.md).
 */
export type RunningAnswers = ReturnType<typeof createRunningAnswers>;

type Running = { conversation: string; draft: string; controller: AbortController };

const draftKey = (chatId: number, draftId: number) => `${chatId}/${draftId}`;

export function createRunningAnswers() {
  const byConversation = new Map<string, Running>();
  const byDraft = new Map<string, Running>();

  const stop = (running: Running | undefined): boolean => {
    if (running === undefined || running.controller.signal.aborted) return false;
    running.controller.abort();
    return true;
  };

  return {
    /** Registers an answer being written; `done` when it ends, stopped or not. */
    start(conversation: string, chatId: number, draftId: number) {
      const running: Running = {
        conversation,
        draft: draftKey(chatId, draftId),
        controller: new AbortController(),
      };
      byConversation.set(conversation, running);
      byDraft.set(running.draft, running);
      return {
        signal: running.controller.signal,
        done() {
          if (byConversation.get(conversation) === running) byConversation.delete(conversation);
          if (byDraft.get(running.draft) === running) byDraft.delete(running.draft);
        },
      };
    },
    /** /stop: false when the conversation has no answer being written. */
    stopConversation: (conversation: string): boolean => stop(byConversation.get(conversation)),
    /** The draft's stop button (a stopped_message_generation update). */
    stopDraft: (chatId: number, draftId: number): boolean =>
      stop(byDraft.get(draftKey(chatId, draftId))),
  };
}
