import { type BackoffPolicy, createBackoff, pause, type Random } from "./backoff.js";

/** What a call that went through the limit learned: whether the server turned it away. */
export type Outcome = { limited: false } | { limited: true; serverDelayMs?: number | undefined };

/**
 * One call let through; it must tell how it went, once, whatever happened. `accepted` tells
 * early that the server took it (a stream's first chunk): the calls waiting behind it may go,
 * and only a 429 after that (inside the stream) still counts.
 */
export type Pass = { accepted(): void; done(outcome: Outcome): void };

/**
 * A rate limit shared by every caller of one process (all the chats using one API key): when the
 * server turns a call away (429), every caller waits, not only the one that was told.
 */
export type SharedLimit = {
  /**
   * Waits until a call may go out and lets it through; undefined when the limit would still hold
   * at `deadline` (ms, by `now`) — the caller gives up at once instead of waiting in vain — or
   * when `signal` aborted.
   */
  enter(deadline: number, signal?: AbortSignal): Promise<Pass | undefined>;
  /** How long calls are held back from now (0 when they go at once). */
  closedForMs(): number;
};

export type SharedLimitDeps = {
  /** Waits when the server named none (RetryInfo), by consecutive closings. */
  policy: BackoffPolicy;
  random?: Random;
  now?: () => number;
  /** Waits out a closing; tests pass one that returns at once. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Told of every call the server turned away, and how long the limit now holds. */
  onLimited?(closedForMs: number): void;
};

/** setTimeout's longest delay; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type Deferred = { promise: Promise<void>; resolve(): void };

function deferred(): Deferred {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * Resolves when `promise` does (true), or false at `ms` or an abort, whichever comes first. A real
 * timer, not the injected sleep: this waits for another call, which a test cannot hurry along.
 */
async function within(promise: Promise<void>, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const giveUp = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.min(MAX_TIMER_MS, Math.max(0, ms)));
    onAbort = () => resolve(false);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise.then(() => true as const), giveUp]);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * After a 429 the limit closes for the server's RetryInfo delay (or a backoff that grows with each
 * closing in a row), and every call waits it out. Then one call goes first, as a probe: until it
 * comes back the others keep waiting, so a quota that is still spent costs one more 429, not one
 * per waiting chat. A probe that is not turned away opens the limit for all.
 *
 * Only news from a call let through after the latest closing counts as news: the calls that were
 * already out when the limit closed come back with 429s of the same spent quota (they may only
 * lengthen the wait, by their own RetryInfo) or with answers begun before it (they say nothing
 * about the quota now).
 */
export function createSharedLimit(deps: SharedLimitDeps): SharedLimit {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? pause;
  const closings = createBackoff(deps.policy, deps.random);
  let closedUntil = 0;
  /** Counts closings; a pass remembers the one it was let through under. */
  let epoch = 0;
  /** Closed, and no call has since come back unlimited: the next call goes alone. */
  let needsProbe = false;
  let probe: Deferred | undefined;

  function report(passEpoch: number, isProbe: boolean, outcome: Outcome): void {
    if (outcome.limited) {
      const fresh = passEpoch === epoch;
      const waitMs = fresh ? closings.next(outcome.serverDelayMs) : (outcome.serverDelayMs ?? 0);
      if (fresh) {
        epoch++;
        needsProbe = true;
      }
      closedUntil = Math.max(closedUntil, now() + waitMs);
      deps.onLimited?.(closedUntil - now());
    } else if (passEpoch === epoch) {
      closings.reset();
      needsProbe = false;
    }
    if (isProbe) {
      const settled = probe;
      probe = undefined;
      settled?.resolve();
    }
  }

  function pass(isProbe: boolean): Pass {
    const passEpoch = epoch;
    let reported = false;
    let taken = false;
    return {
      accepted() {
        if (reported || taken) return;
        taken = true;
        report(passEpoch, isProbe, { limited: false });
      },
      done(outcome) {
        if (reported) return;
        reported = true;
        if (taken && !outcome.limited) return;
        // A probe already let the others go when it was taken.
        report(passEpoch, isProbe && !taken, outcome);
      },
    };
  }

  return {
    async enter(deadline, signal) {
      // The closing this caller has waited out already: an injected sleep may return early.
      let waited = -1;
      for (;;) {
        if (signal?.aborted) return undefined;
        const waitMs = closedUntil - now();
        if (waitMs > 0 && waited !== epoch) {
          if (closedUntil > deadline) return undefined;
          waited = epoch;
          await sleep(waitMs, signal);
          continue;
        }
        if (probe) {
          if (!(await within(probe.promise, deadline - now(), signal))) return undefined;
          continue;
        }
        if (needsProbe) {
          probe = deferred();
          return pass(true);
        }
        return pass(false);
      }
    },
    closedForMs: () => Math.max(0, closedUntil - now()),
  };
}
