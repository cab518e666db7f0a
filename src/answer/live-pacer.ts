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
