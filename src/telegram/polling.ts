import type { Api } from "grammy";
import type { Logger } from "../logger.js";
import type { Ingest } from "./ingest.js";

const POLL_TIMEOUT_SECONDS = 25;
const MAX_BACKOFF_MS = 30_000;

/**
 * Long polling for local development. An update is confirmed to Telegram (by asking for the next
 * offset) only after the inbox stored it, so a crash between the two loses nothing.
 */
export function startPolling(deps: {
  api: Api;
  ingest: Ingest;
  logger: Logger;
  allowedUpdates: NonNullable<Parameters<Api["getUpdates"]>[0]>["allowed_updates"];
}) {
  const abort = new AbortController();
  let offset = 0;
  let failures = 0;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const stop = () => {
        clearTimeout(timer);
        resolve();
      };
      // Removed when the pause ends: failures can go on for hours, each adding a pause.
      const timer = setTimeout(() => {
        abort.signal.removeEventListener("abort", stop);
        resolve();
      }, ms);
      abort.signal.addEventListener("abort", stop, { once: true });
    });

  const loop = (async () => {
    while (!abort.signal.aborted) {
      try {
        const updates = await deps.api.getUpdates(
          { offset, timeout: POLL_TIMEOUT_SECONDS, allowed_updates: deps.allowedUpdates },
          // grammY types its signal with the abort-controller polyfill; Node's own is compatible.
          abort.signal as unknown as Parameters<Api["getUpdates"]>[1],
        );
        for (const update of updates) {
          await deps.ingest(update);
          offset = update.update_id + 1;
        }
        failures = 0;
      } catch (error) {
        if (abort.signal.aborted) break;
        failures++;
        const wait = Math.min(MAX_BACKOFF_MS, 500 * 2 ** failures);
        deps.logger.warn({ err: error, retry_in_ms: wait }, "polling failed; retrying");
        await pause(wait);
      }
    }
  })();

  return {
    async stop(): Promise<void> {
      abort.abort();
      await loop;
    },
  };
}
