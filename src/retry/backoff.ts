/**
 * Exponential backoff with full jitter, for every retry loop of the service (Gemini calls, the
 * inbox, the database, Telegram polling). Without jitter, replicas that failed together (a
 * database restart, an outage of Gemini or Telegram) would retry together, in lockstep, and
 * meet the recovering service as one wave after another.
 */

/** A source of numbers in [0, 1), like Math.random; tests pass their own. */
export type Random = () => number;

export type BackoffPolicy = {
  /** Ceiling of the first retry's delay; each further retry doubles it. */
  baseMs: number;
  /** Cap on any delay, a server-given one included. */
  maxMs: number;
};

/**
 * The delay before retry number `retry` (1 for the first): a random time below
 * min(maxMs, baseMs · 2^(retry − 1)) ("full jitter"). A delay the server asked for (Telegram's
 * retry_after, Gemini's RetryInfo) takes precedence: it is waited in full, plus up to a tenth of
 * it (at most baseMs) at random, so that the callers it stopped together do not all come back at
 * the same instant; capped at maxMs.
 */
export function backoffDelay(
  retry: number,
  policy: BackoffPolicy,
  random: Random,
  serverDelayMs?: number,
): number {
  if (serverDelayMs !== undefined) {
    const spread = Math.min(policy.baseMs, serverDelayMs / 10);
    return Math.min(policy.maxMs, Math.round(serverDelayMs + random() * spread));
  }
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** A retry loop that gives up: after maxAttempts, or before a wait would pass maxTotalMs. */
export type RetryBudget = BackoffPolicy & {
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  /** No retry starts once the attempts and waits so far plus the next wait would exceed this. */
  maxTotalMs: number;
};

/**
 * The wait before the attempt after `attempt` (1 for the first), or undefined when the budget
 * allows no more: `spentMs` is the time the attempts and waits so far took.
 */
export function nextRetryDelay(
  attempt: number,
  spentMs: number,
  budget: RetryBudget,
  random: Random,
  serverDelayMs?: number,
): number | undefined {
  const delayMs = backoffDelay(attempt, budget, random, serverDelayMs);
  if (attempt >= budget.maxAttempts || spentMs + delayMs > budget.maxTotalMs) return undefined;
  return delayMs;
}

/** Consecutive failures of one loop, and the delay after each; a success starts it over. */
export type Backoff = {
  /** Counts a failure and returns how long to wait before trying again. */
  next(serverDelayMs?: number): number;
  /** A success: the next failure waits as little as the first. */
  reset(): void;
  /** Failures since the last success. */
  readonly failures: number;
};

export function createBackoff(policy: BackoffPolicy, random: Random = Math.random): Backoff {
  let failures = 0;
  return {
    next(serverDelayMs) {
      failures++;
      return backoffDelay(failures, policy, random, serverDelayMs);
    },
    reset() {
      failures = 0;
    },
    get failures() {
      return failures;
    },
  };
}

/** Waits `ms`; an abort ends the wait early (resolving, not throwing: the caller checks why). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
