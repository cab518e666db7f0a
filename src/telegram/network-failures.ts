import { HttpError, type Transformer } from "grammy";
import type { Logger } from "../logger.js";

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
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
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
  return current instanceof Error ? current.message : String(current ?? "unknown");
}

/**
 * Logs every Bot API call that got no answer, with its cause. Installed first, so that it sees
 * every attempt auto-retry makes: network failures are retried without end (by grammY at start-up,
 * by auto-retry afterwards), and this is how an operator learns why such a bot does nothing. A
 * request its caller aborted (the typing indicator, when the turn ends) is no failure at all.
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
