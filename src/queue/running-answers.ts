/**
 * The answers this process is writing, so that a stop can reach them. A stop cannot wait its turn
 * in the inbox (which runs one update per conversation at a time, behind the very answer it
 * stops), so the ingest handles it as it arrives and signals the running turn here.
 *
 * In-process: a stop for an answer another replica writes goes there through the database
 * (src/queue/replica-stops.ts), which ends it here by its update id.
 */
export type RunningAnswers = ReturnType<typeof createRunningAnswers>;

type Running = {
  conversation: string;
  draft: string;
  controller: AbortController;
  askedBy: number | undefined;
};

/** An answer being written, as a stop sees it: who asked for it, and how to end it. */
export type RunningAnswer = {
  /** The sender the answer is for (see ToolContext.askedBy); undefined when unknown. */
  askedBy: number | undefined;
  /** Ends it; false when it had already been stopped. */
  stop(): boolean;
};

const draftKey = (chatId: number, draftId: number) => `${chatId}/${draftId}`;

export function createRunningAnswers() {
  const byConversation = new Map<string, Running>();
  const byDraft = new Map<string, Running>();
  const byUpdate = new Map<number, Running>();

  const stop = (running: Running | undefined): boolean => {
    if (running === undefined || running.controller.signal.aborted) return false;
    running.controller.abort();
    return true;
  };

  return {
    /**
     * Registers the answer to update `updateId`, asked for by `askedBy`; `done` when it ends,
     * stopped or not.
     */
    start(
      conversation: string,
      chatId: number,
      draftId: number,
      updateId: number,
      askedBy?: number,
    ) {
      const running: Running = {
        conversation,
        draft: draftKey(chatId, draftId),
        controller: new AbortController(),
        askedBy,
      };
      byConversation.set(conversation, running);
      byDraft.set(running.draft, running);
      byUpdate.set(updateId, running);
      return {
        signal: running.controller.signal,
        done() {
          if (byConversation.get(conversation) === running) byConversation.delete(conversation);
          if (byDraft.get(running.draft) === running) byDraft.delete(running.draft);
          if (byUpdate.get(updateId) === running) byUpdate.delete(updateId);
        },
      };
    },
    /**
     * The answer being written here in the conversation (for /stop, which checks who may stop
     * it first); undefined when there is none.
     */
    runningIn(conversation: string): RunningAnswer | undefined {
      const running = byConversation.get(conversation);
      if (running === undefined || running.controller.signal.aborted) return undefined;
      return { askedBy: running.askedBy, stop: () => stop(running) };
    },
    /** The draft's stop button (a stopped_message_generation update). */
    stopDraft: (chatId: number, draftId: number): boolean =>
      stop(byDraft.get(draftKey(chatId, draftId))),
    /** A stop that reached another replica, for the answer to this update. */
    stopUpdate: (updateId: number): boolean => stop(byUpdate.get(updateId)),
  };
}
