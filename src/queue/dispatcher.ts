import type { Logger } from "../logger.js";
import { type Backoff, backoffDelay, createBackoff, pause, type Random } from "../retry/backoff.js";
import type { Inbox, InboxItem, Lease } from "./inbox.js";
import { WakePolicy } from "./wake-policy.js";

export type DispatcherDeps = {
  inbox: Inbox;
  /**
   * Runs one update to completion, checking its lease before each model call, each write and its
   * answer; a throw is an infrastructure failure and the update is retried (unless the lease was
   * lost: then the update is left to the worker that holds it now).
   */
  handle(item: InboxItem, lease: Lease): Promise<void>;
  logger: Logger;
  /** Updates running at once, over all chats. */
  concurrency: number;
  /** How often to look for work nobody announced (other replicas, expired leases). */
  pollMs: number;
  /** How often the running updates' leases are extended (all of them in one statement). */
  renewMs: number;
  /** Infrastructure failures tolerated before an update is given up as failed. */
  maxAttempts: number;
  /** How long to wait before running a failed update again, when the error says (a flood wait). */
  retryDelay?(error: unknown): number | undefined;
  /** Called once when an update is given up, to tell its chat. */
  onGiveUp?(item: InboxItem, error: unknown): Promise<void>;
  /** The jitter of every retry delay; tests pass their own. */
  random?: Random;
};

// A database restart or a network blip is over in seconds: up to 1 s, 2 s, 4 s, 8 s between
// attempts. A flood wait Telegram asked for is waited in full, however long.
const RELEASE_BACKOFF = { baseMs: 1_000, maxMs: 60 * 60 * 1000 };
// Recording how an update ended is tried again within 0.1 s, 0.2 s, 0.4 s … up to 2 s apart.
const FINISH_BACKOFF = { baseMs: 100, maxMs: 2_000 };
// Updates one claim takes at most: a burst is claimed in few statements, each short enough not to
// hold the database's write lock for long.
const CLAIM_BATCH = 64;
// An inbox that cannot be read is asked again within 1 s, 2 s, 4 s … up to 30 s apart.
const CLAIM_BACKOFF = { baseMs: 1_000, maxMs: 30_000 };

/**
 * Pulls updates from the inbox and runs them: as many at once as `concurrency` allows, never two
 * of one chat (the inbox's claim guarantees that, across replicas too).
 */
export class Dispatcher {
  private readonly active = new Set<Promise<void>>();
  private running = false;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly wakePolicy = new WakePolicy();
  /** When the next poll is due, whatever wakes the loop meanwhile. */
  private nextPoll = 0;
  /** Announcements due later (see announceAfter). */
  private readonly later = new Set<NodeJS.Timeout>();

  /** Leases of the updates running here, renewed together. */
  private readonly leases = new Set<Lease>();
  private renewal: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private readonly random: Random;
  /** Claims that failed in a row (the database away). */
  private readonly claimFailures: Backoff;

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random;
    this.claimFailures = createBackoff(CLAIM_BACKOFF, this.random);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** An update was stored in the inbox by this process, for `chat` (the inbox's chat id). */
  announce(chat: string | null): void {
    this.wakePolicy.announced(chat);
    this.wake();
  }

  /**
   * An update was stored that may run only `ms` from now (an album's item, once its album has
   * settled): it is announced then, rather than found by the next poll.
   */
  announceAfter(ms: number, chat: string | null): void {
    const timer = setTimeout(() => {
      this.later.delete(timer);
      this.announce(chat);
    }, ms);
    this.later.add(timer);
  }

  /** Stops claiming, then waits (up to `timeoutMs`) for running updates to finish. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.running = false;
    for (const timer of this.later) clearTimeout(timer);
    this.later.clear();
    this.wake();
    await this.loop;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const drained = Promise.all([...this.active]).then(() => true);
    const finished = await Promise.race([drained, timeout]);
    clearTimeout(timer);
    return finished;
  }

  private wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.();
  }

  private async run(): Promise<void> {
    this.nextPoll = Date.now() + this.deps.pollMs;
    while (this.running) {
      if (this.active.size >= this.deps.concurrency || !this.wakePolicy.claimDue) {
        await this.sleep(this.nextPoll - Date.now());
        continue;
      }
      // On SQLite a claim runs before the next webhook request is read, so claiming at once takes
      // a burst one update a statement, each reading every unfinished update; claimed once the
      // event loop has read what arrived with it, one statement takes them together.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!this.running) break;
      const round = this.wakePolicy.beginClaim();
      const limit = Math.min(CLAIM_BATCH, this.deps.concurrency - this.active.size);
      let items: InboxItem[];
      try {
        items = await this.deps.inbox.claimMany(limit);
        this.claimFailures.reset();
      } catch (error) {
        this.wakePolicy.claimFailed(round);
        const waitMs = this.claimFailures.next();
        this.deps.logger.error(
          { err: error, retry_in_ms: waitMs },
          "could not read the inbox; retrying",
        );
        await this.sleep(waitMs);
        continue;
      }
      for (const item of items) this.launch(item);
      this.wakePolicy.endClaim(
        round,
        items.map((item) => item.chatId),
        limit,
      );
    }
  }

  private launch(item: InboxItem): void {
    const task = this.execute(item).finally(() => {
      this.active.delete(task);
      this.wakePolicy.finishedOne(item.chatId);
      this.wake();
    });
    this.active.add(task);
  }

  /**
   * Renews every running update's lease together, one statement for all, while any runs. A
   * renewal still under way when the next is due (the database slow) is not doubled.
   */
  private holdLease(lease: Lease): () => void {
    this.leases.add(lease);
    this.renewal ??= setInterval(() => {
      if (this.renewing) return;
      this.renewing = this.deps.inbox
        .renewLeases(this.leases)
        .catch((error: unknown) =>
          this.deps.logger.warn(
            { err: error, leases: this.leases.size },
            "could not renew the leases",
          ),
        )
        .finally(() => {
          this.renewing = undefined;
        });
    }, this.deps.renewMs);
    return () => {
      this.leases.delete(lease);
      if (this.leases.size > 0) return;
      clearInterval(this.renewal);
      this.renewal = undefined;
    };
  }

  private async execute(item: InboxItem): Promise<void> {
    const { inbox, logger } = this.deps;
    const log = logger.child({ update_id: item.updateId, chat_id: item.chatId });
    const lease = inbox.leaseOf(item);
    const release = this.holdLease(lease);
    try {
      // Claimed more often than a run may fail, with no failure recorded: its runs ended with
      // the process (killed out of memory, a crash), or with a lost lease. Run again, it could
      // stop the process again, and every chat's answers with it.
      if (item.attempts > this.deps.maxAttempts) {
        const ended = `claimed ${item.attempts} times, its last run ended without an outcome (the service stopped, or lost it, during the run)`;
        await this.failed(item, lease, log, new Error(ended));
        return;
      }
      try {
        await this.deps.handle(item, lease);
      } catch (error) {
        await this.failed(item, lease, log, error);
        return;
      }
      await this.recordFinished(item, lease, log).catch((error: unknown) =>
        log.error(
          { err: error },
          "could not record the answered update: once its lease ends it runs again, and its stored answer is sent again",
        ),
      );
    } finally {
      release();
    }
  }

  /** A run that threw: retried later, given up after `maxAttempts`, or left to a new holder. */
  private async failed(item: InboxItem, lease: Lease, log: Logger, error: unknown): Promise<void> {
    if (lease.lost) {
      log.warn({ err: error }, "lost the lease of this update to another worker; stopped its run");
      return;
    }
    const reason = error instanceof Error ? error.message : String(error);
    try {
      if (item.attempts >= this.deps.maxAttempts) {
        log.error({ err: error, attempts: item.attempts }, "giving up on an update");
        await lease.ensureHeld();
        await this.deps
          .onGiveUp?.(item, error)
          .catch((notifyError: unknown) =>
            log.warn({ err: notifyError }, "could not tell the chat that its message failed"),
          );
        await this.recordFinished(item, lease, log, { error: reason });
      } else {
        const delayMs = backoffDelay(
          item.attempts,
          RELEASE_BACKOFF,
          this.random,
          this.deps.retryDelay?.(error),
        );
        log.warn(
          { err: error, attempts: item.attempts, retry_in_ms: delayMs },
          "update failed; it will run again",
        );
        await this.deps.inbox.release(item, reason, delayMs);
      }
    } catch (storeError) {
      // The database is away (or the lease went meanwhile); the update runs again once the lease
      // expires, here or elsewhere.
      log.error({ err: storeError }, "could not record the update's failure");
    }
  }

  /**
   * Records how an update ended. Its chat has been told (the answer, or that it failed), so a
   * database that is away for a moment is waited for rather than letting the update run, and
   * send that again. The wait ends with the lease: until then no other worker may claim the
   * update, and after it one may.
   */
  private async recordFinished(
    item: InboxItem,
    lease: Lease,
    log: Logger,
    outcome: { error?: string } = {},
  ): Promise<void> {
    for (let failures = 1; ; failures++) {
      try {
        if (!(await this.deps.inbox.finish(item, outcome))) {
          log.warn(
            "another worker claimed this update as it finished here; it may be answered twice",
          );
        }
        return;
      } catch (error) {
        const waitMs = backoffDelay(failures, FINISH_BACKOFF, this.random);
        if (waitMs >= lease.remainingMs()) throw error;
        log.warn(
          { err: error, retry_in_ms: waitMs },
          "could not record how the update ended; trying again",
        );
        await pause(waitMs);
      }
    }
  }

  /** Waits for a wake-up, or for `ms` to pass, after which a poll is due. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.wakeUp = undefined;
          this.wakePolicy.pollElapsed();
          this.nextPoll = Date.now() + this.deps.pollMs;
          resolve();
        },
        Math.max(0, ms),
      );
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
