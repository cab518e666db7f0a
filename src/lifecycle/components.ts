/** A part of a process that is started, and perhaps stopped again: a listener, a lock, a loop. */
export type Component<T> = {
  /** Names the component in the log when it fails to stop. */
  name: string;
  /**
   * Starts it and returns what it started, for the components after it. `signal` is the stop
   * request: a start that waits (for a lock, for Telegram) ends on it.
   */
  start(signal: AbortSignal): T | Promise<T>;
  /** Stops what `start` returned; none when there is nothing to stop. */
  stop?(started: T): void | Promise<void>;
};

export type ComponentsOptions = {
  /** The stop request during start-up: nothing starts once it is aborted. */
  signal?: AbortSignal;
  /** Told of each stop that fails; the components before it are stopped all the same. */
  onStopFailure(name: string, error: unknown): void;
};

type Stoppable = { name: string; stop(): void | Promise<void> };

/**
 * Components started one after another and stopped in reverse: whatever a component uses was
 * started before it, and is stopped after it. A start that fails, or a stop request, stops those
 * already started, so a start-up that ends early leaves nothing running.
 */
export class Components {
  private readonly started: Stoppable[] = [];
  private readonly signal: AbortSignal;

  constructor(private readonly options: ComponentsOptions) {
    this.signal = options.signal ?? new AbortController().signal;
  }

  /**
   * Starts `component` after those started so far and returns what it started. When its start
   * fails or the stop request came first, the components started before it are stopped, the last
   * first, and the start's error (or the signal's reason) is thrown.
   */
  async start<T>(component: Component<T>): Promise<T> {
    let started: T;
    try {
      this.signal.throwIfAborted();
      started = await component.start(this.signal);
    } catch (error) {
      // A stop that fails is told through onStopFailure; what the caller must see is why the
      // start ended.
      await this.stop().catch(() => {});
      throw error;
    }
    const { stop } = component;
    if (stop) this.started.push({ name: component.name, stop: () => stop(started) });
    return started;
  }

  /**
   * Stops every started component, the last started first, each once. A stop that fails does not
   * keep the others running: each failure is told, and the first is thrown once all have stopped.
   */
  async stop(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (let component = this.started.pop(); component; component = this.started.pop()) {
      try {
        await component.stop();
      } catch (error) {
        this.options.onStopFailure(component.name, error);
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
