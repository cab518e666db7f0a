/**
 * Sends the latest of the values it is offered, one at a time and at most one per interval: a
 * value offered while another is on its way, or before the interval is over, replaces the one
 * waiting. What a live answer needs, whose every frame makes the one before it stale.
 */
export class LatestWins<T> {
  private waiting: T | undefined;
  private sending: T | undefined;
  private busy: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private nextAt = 0;
  private closed = false;

  constructor(
    private readonly deps: {
      /**
       * How to send a value; undefined when sending it would change nothing (it is dropped, and
       * the interval does not start).
       */
      send(value: T): (() => Promise<void>) | undefined;
      /** The least time between two sends, asked before each. */
      intervalMs(): number;
      sent?(value: T): void;
      failed(error: unknown, value: T): void;
      now?: () => number;
    },
  ) {}

  offer(value: T): void {
    if (this.closed) return;
    this.waiting = value;
    this.pump();
  }

  /** Nothing goes out for `ms` (a flood wait). */
  holdFor(ms: number): void {
    this.nextAt = this.now() + ms;
  }

  /** The value being sent goes again at once when it ends, unless a newer one waits. */
  again(): void {
    this.nextAt = 0;
    this.waiting ??= this.sending;
  }

  /** Stops sending; resolves once the send under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.busy;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  private pump(): void {
    if (this.closed || this.busy || this.timer || this.waiting === undefined) return;
    const wait = this.nextAt - this.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
      return;
    }
    const value = this.waiting;
    this.waiting = undefined;
    const send = this.deps.send(value);
    if (send === undefined) return;
    this.sending = value;
    this.nextAt = this.now() + this.deps.intervalMs();
    this.busy = send()
      .then(() => this.deps.sent?.(value))
      .catch((error: unknown) => {
        if (!this.closed) this.deps.failed(error, value);
      })
      .finally(() => {
        this.busy = undefined;
        this.sending = undefined;
        this.pump();
      });
  }
}
