import type { Update } from "grammy/types";
import { CompiledQuery } from "kysely";
import type { Lease } from "../../src/queue/inbox.js";

/**
 * A lease on `update` that is always held, for tests that run updates through the bot without an
 * inbox: the bot runs them as it runs the inbox's, checking and recording as it goes. What is
 * recorded stays in the lease (a run after it sees it, as a run after a crash sees the inbox's);
 * its album is the update alone. Its statements change nothing: a test of what the courier
 * records takes its lease from a real inbox.
 */
export function heldLease(update: Update): Lease {
  const noStatement = () => CompiledQuery.raw("select 1");
  const lease = {
    lost: false,
    delivered: 0,
    liveMessages: [] as readonly number[],
    toolFiles: [] as readonly unknown[],
    renew: async () => {},
    ensureHeld: async () => {},
    remainingMs: () => Number.POSITIVE_INFINITY,
    async recordDelivered(count: number) {
      lease.delivered = count;
    },
    deliveredStatement: noStatement,
    async recordLiveMessages(ids: readonly number[]) {
      lease.liveMessages = [...ids];
    },
    liveMessagesStatement: (ids: readonly (number | null)[]) => ({
      ...noStatement(),
      sentIds: { parameter: 0, ids },
    }),
    async recordToolFiles(files: readonly unknown[]) {
      lease.toolFiles = [...files];
    },
    toolFilesStatement: noStatement,
    takeAlbum: async () => [update],
  };
  return lease;
}
