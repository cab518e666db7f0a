import { autoRetry } from "@grammyjs/auto-retry";
import { Api, type ApiClientOptions, HttpError, type Transformer } from "grammy";
import { type Courier, noCourier } from "../answer/courier.js";
import type { Logger } from "../logger.js";
import type { BackoffPolicy } from "../retry/backoff.js";
import { grammyFetch } from "./grammy-fetch.js";
import { latePressesAnswered } from "./late-presses.js";
import { logNetworkFailures, retryNetworkFailures } from "./network-failures.js";
import { scrubOutgoing } from "./scrub-outgoing.js";

// 429s wait Telegram's retry_after, but not for long: a stalled send holds up its chat's inbox.
const MAX_RETRY_DELAY_SECONDS = 30;
const MAX_RETRY_ATTEMPTS = 3;

export type BotApiDeps = {
  token: string;
  apiRoot: string;
  logger: Logger;
  /** Taken out of everything sent to Telegram (see scrub-outgoing.ts). */
  secrets?: readonly string[];
  /** Sends answers and the live view's calls off the main thread (src/answer/courier.ts). */
  courier?: Courier;
  /** Told of every failed attempt of an API call: Telegram's error code, or "network". */
  onApiError?: (method: string, code: string) => void;
  /** Waits between attempts of a call that got no answer (NETWORK_RETRY; tests shorten them). */
  networkRetry?: BackoffPolicy;
};

/**
 * How the process calls the Bot API: one client (grammY's fetch, Node's), and what each kind of
 * call passes on its way, in order. The bot's own calls (answers, commands' replies) go by the
 * courier, with secrets scrubbed, every failure logged and counted, and retries of network
 * failures and of flood waits and 5xx; the live view's drafts and edits by the courier too,
 * scrubbed and their failures logged and counted, never retried (one retried after a wait would
 * be stale, and the next one replaces it anyway); long polling's getUpdates once each, failures
 * logged and counted, its loop asking again.
 */
export function botApiClients(deps: BotApiDeps) {
  const client: ApiClientOptions = { apiRoot: deps.apiRoot, fetch: grammyFetch };
  const courier = deps.courier ?? noCourier;
  const scrub = scrubOutgoing(deps.secrets ?? []);
  const logFailures = logNetworkFailures(deps.logger, deps.apiRoot);
  const onApiError = deps.onApiError;
  // Before the retries, like the log, so that every failed attempt is counted.
  const countErrors: Transformer | undefined = onApiError
    ? async (prev, method, payload, signal) => {
        try {
          const result = await prev(method, payload, signal);
          if (!result.ok) onApiError(method, String(result.error_code));
          return result;
        } catch (error) {
          if (error instanceof HttpError && !signal?.aborted) onApiError(method, "network");
          throw error;
        }
      }
    : undefined;

  const live = new Api(deps.token, client);
  // First, so that it takes the place of the request itself under every other transformer.
  live.config.use(courier.live, scrub, logFailures);
  // A draft's flood wait is the one a burst of answers meets first.
  if (countErrors) live.config.use(countErrors);
  const polling = new Api(deps.token, client);
  polling.config.use(logFailures);
  if (countErrors) polling.config.use(countErrors);

  return {
    client,
    courier,
    live,
    polling,
    /** Puts the bot's own calls' transformers on its Api (`bot.api`). */
    configure(api: Api): void {
      api.config.use(courier.live, scrub, logFailures);
      if (countErrors) api.config.use(countErrors);
      api.config.use(latePressesAnswered, retryNetworkFailures(deps.networkRetry));
      // Flood waits and Telegram's 5xx; a call that got no answer is retryNetworkFailures'.
      api.config.use(
        autoRetry({
          maxDelaySeconds: MAX_RETRY_DELAY_SECONDS,
          maxRetryAttempts: MAX_RETRY_ATTEMPTS,
          rethrowHttpErrors: true,
        }),
      );
    },
  };
}
