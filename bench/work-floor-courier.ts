import { parentPort, workerData } from "node:worker_threads";
import { openDeliveredRecord } from "./work-floor-storage.js";

/**
 * The work floor's courier (bench/work-floor-service.ts): the delivery guarantee of decision 0006
 * done by hand. It sends a message and records its id the moment Telegram accepts it, on a thread
 * whose event loop does nothing else, so the record is not left waiting behind other chats' work.
 */

/** A sendMessage body, and the update whose answer it is. */
export type FloorDelivery = { id: number; url: string; body: string; updateId: number };
/** The sent message's id, or what went wrong. */
export type FloorDelivered = { id: number; messageId?: number; error?: string };

const port = parentPort;
if (port) {
  const recordDelivered = openDeliveredRecord(workerData as string);
  port.on("message", async ({ id, url, body, updateId }: FloorDelivery) => {
    let reply: FloorDelivered;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const answer = (await res.json()) as { ok: boolean; result?: { message_id: number } };
      const messageId = answer.result?.message_id;
      if (!answer.ok || messageId === undefined) throw new Error("Telegram refused the message");
      await recordDelivered(updateId, JSON.stringify([messageId]));
      reply = { id, messageId };
    } catch (error) {
      reply = { id, error: String(error) };
    }
    port.postMessage(reply);
  });
}
