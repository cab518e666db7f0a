import type { Logger } from "../logger.js";

/**
 * How long one write probe's outcome answers every /healthz: a load balancer polling several
 * times a second, or many of them, then costs one write a second, not one a request.
 */
export const PROBE_CACHE_MS = 1_000;

/** What GET /healthz answers: 200 `{"status":"ok"}` when ready, else 503 with the reason. */
export type Health = { ready: true; status: "ok" } | { ready: false; status: string };

const OK: Health = { ready: true, status: "ok" };
const STARTING: Health = { ready: false, status: "starting" };
const STOPPING: Health = { ready: false, status: "stopping" };
const CANNOT_STORE: Health = { ready: false, status: "database cannot store updates" };

type Phase =
  | { kind: "starting" }
  | { kind: "ready"; probe: () => Promise<void> }
  | { kind: "stopping" };

export type Readiness = {
  /**
   * Updates are taken from now on: ready for as long as `probe` (a write like the one that stores
   * an update) succeeds.
   */
  ready(probe: () => Promise<void>): void;
  /** No more updates are taken: not ready, for good. */
  stopping(): void;
  check(): Promise<Health>;
};

/**
 * Whether the service takes updates (DESIGN.md, /healthz): not while it starts or stops, and not
 * while its database cannot store what the webhook is given (a full disk answers reads, not
 * writes).
 */
export function createReadiness(deps: {
  logger: Logger;
  cacheMs?: number;
  now?: () => number;
}): Readiness {
  const cacheMs = deps.cacheMs ?? PROBE_CACHE_MS;
  const now = deps.now ?? Date.now;
  let phase: Phase = { kind: "starting" };
  let last: { at: number; health: Health } | undefined;
  let running: Promise<Health> | undefined;

  /** The probe's outcome, run at most once per cacheMs, however many ask at once. */
  function probed(probe: () => Promise<void>): Promise<Health> {
    if (last !== undefined && now() - last.at < cacheMs) return Promise.resolve(last.health);
    running ??= probe()
      .then(
        (): Health => {
          if (last?.health.ready === false) {
            deps.logger.info("the database stores updates again: /healthz answers 200");
          }
          return OK;
        },
        (error: unknown): Health => {
          if (last?.health.ready !== false) {
            deps.logger.error(
              { err: error },
              "the database cannot store updates: /healthz answers 503 until it can",
            );
          }
          return CANNOT_STORE;
        },
      )
      .then((health) => {
        last = { at: now(), health };
        running = undefined;
        return health;
      });
    return running;
  }

  return {
    ready(probe) {
      if (phase.kind === "starting") phase = { kind: "ready", probe };
    },
    stopping() {
      phase = { kind: "stopping" };
    },
    async check() {
      const asked = phase;
      if (asked.kind === "starting") return STARTING;
      if (asked.kind === "stopping") return STOPPING;
      const health = await probed(asked.probe);
      // A stop that began while the probe ran wins.
      return phase.kind === "stopping" ? STOPPING : health;
    },
  };
}
