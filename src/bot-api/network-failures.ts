import { HttpError, type Transformer } from "grammy";
import type { Logger } from "../logger.js";
import { type BackoffPolicy, createBackoff, pause, type Random } from "../retry/backoff.js";

// Error codes of Node's sockets, DNS resolver and fetch (undici), said as an operator would.
const CAUSES: Readonly<Record<string, string>> = {
  ENOTFOUND: "DNS lookup failed: no such host",
  EAI_AGAIN: "DNS lookup failed: no DNS server answered",
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ETIMEDOUT: "timed out connecting",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  UND_ERR_CONNECT_TIMEOUT: "timed out connecting",
  UND_ERR_HEADERS_TIMEOUT: "timed out waiting for the answer",
  UND_ERR_BODY_TIMEOUT: "timed out reading the answer",
  UND_ERR_SOCKET: "connection closed by the other side",
  CERT_HAS_EXPIRED: "TLS certificate expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS certificate not trusted",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS certificate not trusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS certificate not trusted",
};

/**
 * Why a request never got an answer, from the chain of errors under it: grammY's HttpError holds
 * fetch's "fetch failed", whose cause is the socket's or resolver's error (an AggregateError when
 * every address of a host failed).
 */
export function networkCause(error: unknown): string {
  let current: unknown = error;
  // The innermost error is the most precise, when no code of the table names it.
  let innermost: Error | undefined;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    innermost = current;
    const { code } = current as NodeJS.ErrnoException;
    if (code !== undefined && code in CAUSES) return `${CAUSES[code]} (${code})`;
    // grammY's own request timeout (its client's timeoutSeconds).
    if (/timed out/i.test(current.message)) return current.message;
    current =
      current instanceof HttpError
        ? current.error
        : current instanceof AggregateError && current.errors.length > 0
          ? current.errors[0]
          : current.cause;
  }
  if (current !== undefined && !(current instanceof Error)) return String(current);
  if (innermost === undefined) return "unknown";
  const { code } = innermost as NodeJS.ErrnoException;
  return typeof code === "string" ? `${innermost.message} (${code})` : innermost.message;
}

/** Between two attempts of a Bot API call that got no answer: up to 3 s, doubling, at most 60 s. */
export const NETWORK_RETRY: BackoffPolicy = { baseMs: 3_000, maxMs: 60_000 };

/**
 * Tries a Bot API call that got no answer (the network, a timeout) again until it gets one, for as
 * long as Telegram is away: nothing reaches the chat meanwhile, and the inbox holds the update. The
 * waits are capped (NETWORK_RETRY), so that the bot is back within a minute of Telegram; auto-retry's
 * own retries of these double up to an hour, which after a long outage kept a chat waiting about as
 * long again. A call its caller gave up on is not tried again.
 */
export function retryNetworkFailures(
  policy: BackoffPolicy = NETWORK_RETRY,
  random: Random = Math.random,
): Transformer {
  return async (prev, method, payload, signal) => {
    // grammY types its signal with the abort-controller polyfill; Node's own is what it gets.
    const abort = signal as unknown as AbortSignal | undefined;
    const failures = createBackoff(policy, random);
    for (;;) {
      try {
        return await prev(method, payload, signal);
      } catch (error) {
        if (!(error instanceof HttpError) || abort?.aborted) throw error;
        await pause(failures.next(), abort);
        if (abort?.aborted) throw error;
      }
    }
  };
}

/**
 * Logs every Bot API call that got no answer, with its cause. Installed first, so that it sees
 * every attempt: network failures are tried again without end (by grammY at start-up, by
 * retryNetworkFailures afterwards), and this is how an operator learns why such a bot does
 * nothing. A request its caller aborted (the typing indicator, when the turn ends) is no failure.
 */
export function logNetworkFailures(logger: Logger, apiRoot: string): Transformer {
  return async (prev, method, payload, signal) => {
    try {
      return await prev(method, payload, signal);
    } catch (error) {
      if (error instanceof HttpError && !signal?.aborted) {
        logger.warn(
          { method, cause: networkCause(error), api_root: apiRoot },
          "cannot reach Telegram; trying again",
        );
      }
      throw error;
    }
  };
}
