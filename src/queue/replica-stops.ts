import { type Kysely, sql } from "kysely";
import { listenPostgres, type PostgresListener } from "../db/postgres-listener.js";
import type { Database } from "../db/schema.js";
import type { Logger } from "../logger.js";
import type { Inbox, StopTarget } from "./inbox.js";

/**
 * Stops across PostgreSQL replicas. A stop (the draft's button, /stop) reaches whichever replica
 * Telegram's webhook request lands on, while the answer may be written by another. The replica
 * the stop reaches records it on the running update's inbox row and notifies the channel; each
 * replica listens on a connection of its own and ends the answer when the notification names it.
 * A notification missed (the listening connection was down) is made good by the record: the
 * running replica finds it at its next lease renewal (a third of INBOX_LEASE_SECONDS).
 */
export const STOP_CHANNEL = "koroku_stop";

type StopNotice = { worker: string; update: number };

/**
 * Asks other replicas to stop the answer a stop is for; true when one runs it (the stop then goes
 * there), false when no replica does, "refused" when `may` (given who asked for each answer, from
 * `askerOf`) let none of them be stopped.
 */
export function replicaStopper(deps: {
  db: Kysely<Database>;
  inbox: Pick<Inbox, "requestStop" | "runningElsewhere">;
  /** Who asked for the answer an inbox item runs. */
  askerOf(update: unknown): Promise<number | undefined>;
  logger: Logger;
}): (
  target: StopTarget,
  may?: (askedBy: number | undefined) => Promise<boolean>,
) => Promise<boolean | "refused"> {
  return async (target, may) => {
    let updateIds: number[] | undefined;
    if (may) {
      const found = await deps.inbox.runningElsewhere(target);
      if (found.length === 0) return false;
      updateIds = [];
      for (const item of found) {
        if (await may(await deps.askerOf(item.update))) updateIds.push(item.updateId);
      }
      if (updateIds.length === 0) return "refused";
    }
    const running = await deps.inbox.requestStop(updateIds ? { updateIds } : target);
    for (const { updateId, worker } of running) {
      const notice: StopNotice = { worker, update: updateId };
      await sql`select pg_notify(${STOP_CHANNEL}, ${JSON.stringify(notice)})`
        .execute(deps.db)
        .catch((error: unknown) =>
          // Recorded all the same: the replica finds it when it renews the update's lease.
          deps.logger.warn(
            { err: error, update_id: updateId },
            "could not notify the replica running an answer to stop it",
          ),
        );
    }
    return running.length > 0;
  };
}

/**
 * Listens for stops meant for this worker's answers. Notices carry the worker's id, so that
 * deployments sharing a database (in other schemas) never stop each other's answers.
 */
export function listenForStops(deps: {
  connectionString: string;
  workerId: string;
  stopUpdate(updateId: number): void;
  logger: Logger;
}): PostgresListener {
  return listenPostgres({
    connectionString: deps.connectionString,
    channel: STOP_CHANNEL,
    logger: deps.logger,
    onNotification(payload) {
      const notice = parseNotice(payload);
      if (notice?.worker === deps.workerId) deps.stopUpdate(notice.update);
    },
  });
}

function parseNotice(payload: string): StopNotice | undefined {
  try {
    const notice = JSON.parse(payload) as Partial<StopNotice>;
    return typeof notice.worker === "string" && Number.isSafeInteger(notice.update)
      ? (notice as StopNotice)
      : undefined;
  } catch {
    return undefined;
  }
}
