import { type Api, GrammyError } from "grammy";
import type { Logger } from "../logger.js";
import { createBackoff, pause, type Random } from "../retry/backoff.js";
import type { Ingest } from "./ingest.js";

const POLL_TIMEOUT_SECONDS = 25;
// Up to 1 s, 2 s, 4 s … 30 s between failed polls, or what Telegram's retry_after asks.
const POLL_BACKOFF = { baseMs: 1_000, maxMs: 30_000 };

/**
 * Long polling for local development. An update is confirmed to Telegram (by asking for the next
 * offset) only after the inbox stored it, so a crash between the two loses nothing.
 */
export function startPolling(deps: {
  api: Api;
  ingest: Ingest;
  logger: Logger;
  allowedUpdates: NonNullable<Parameters<Api["getUpdates"]>[0]>["allowed_updates"];
  /** The jitter of the retry delays; tests pass their own. */
  random?: Random;
}) {
  const abort = new AbortController();
  let offset = 0;
  const failures = createBackoff(POLL_BACKOFF, deps.random);

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
        failures.reset();
      } catch (error) {
        if (abort.signal.aborted) break;
        const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
        const wait = failures.next(retryAfter === undefined ? undefined : retryAfter * 1000);
        deps.logger.warn({ err: error, retry_in_ms: wait }, "polling failed; retrying");
        await pause(wait, abort.signal);
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
