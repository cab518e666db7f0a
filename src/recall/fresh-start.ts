import type { SessionStore } from "../session/store.js";

/**
 * What the model reads in place of a summary after /new: the context starts empty, and the
 * history stays stored, so search_history and read_memory still reach it.
 */
export const FRESH_START_NOTE =
  "The user started a fresh conversation here with /new. What was said before is left out of this context on purpose; do not bring it up unless the user asks, and then find it with search_history or read_memory.";

/** Whether a summary's text is /new's note, for the model only: neither shown nor searched. */
export const isFreshStartNote = (summaryText: string): boolean => summaryText === FRESH_START_NOTE;

/**
 * /new where no new topic can be opened: a fresh context in the same conversation. Unlike /clear
 * nothing is deleted: a compaction event whose summary is FRESH_START_NOTE covers the whole
 * context, so the model starts afresh while recall still finds everything. Returns the events
 * the context held (0: it was empty, nothing was written).
 */
export async function startFresh(
  store: Pick<SessionStore, "loadContext" | "appendCompaction">,
  chatId: string,
): Promise<number> {
  const { summary, events } = await store.loadContext(chatId);
  const first = events[0];
  const last = events.at(-1);
  if (!summary && !first) return 0;
  await store.appendCompaction(chatId, {
    event: {
      v: 1,
      event_type: "compaction",
      summary: [{ kind: "text", text: FRESH_START_NOTE }],
      summarized_events: events.length,
    },
    coversFromId: summary?.coversFromId ?? first?.id ?? 0,
    coversToId: last?.id ?? summary?.coversToId ?? 0,
  });
  return events.length + (summary ? 1 : 0);
}
