import { type Kysely, sql } from "kysely";
import type { Logger } from "../logger.js";
import type { Database } from "./schema.js";

/** Milliseconds since the epoch, as leases and timestamps count them. */
export type Now = () => number;

export type DatabaseClock = {
  now: Now;
  /** What this host's clock is behind the database's, in ms, as last measured. */
  readonly offsetMs: number;
  /** Measures the offset again; on failure the last one stays and a warning is logged. */
  sync(): Promise<void>;
  stop(): void;
};

/** Round trips per measurement: the fastest one tells the server's time most precisely. */
const SAMPLES = 3;
/** An offset worth telling the operator about: a good NTP client keeps hosts within milliseconds. */
const WARN_OFFSET_MS = 1_000;

/** PostgreSQL's own clock, read at the time of the query (not of its transaction). */
export async function readPostgresTime(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{
    ms: string;
  }>`select (extract(epoch from clock_timestamp()) * 1000)::text as ms`.execute(db);
  const ms = Number(rows[0]?.ms);
  if (!Number.isFinite(ms)) throw new Error(`PostgreSQL returned no time (${rows[0]?.ms})`);
  return ms;
}

/**
 * Replicas compare leases that other replicas wrote, so they must agree on the time: with clocks
 * apart by more than half a lease, one would take over another's running turn early. Each replica
 * therefore times leases by the database server's clock: it measures how far its own clock is off
 * (the server's time against the middle of the round trip) at start-up and then every
 * `resyncMs`, and adds that offset to its clock. A host clock stepped in between (NTP) shifts the
 * result until the next measurement.
 */
export async function startDatabaseClock(deps: {
  readServerTime: () => Promise<number>;
  logger: Logger;
  resyncMs: number;
  localNow?: Now;
}): Promise<DatabaseClock> {
  const localNow = deps.localNow ?? Date.now;
  let offsetMs = 0;

  async function measure(): Promise<number> {
    const samples: { roundTrip: number; offset: number }[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const sent = localNow();
      const server = await deps.readServerTime();
      const received = localNow();
      samples.push({ roundTrip: received - sent, offset: server - (sent + received) / 2 });
    }
    return samples.reduce((best, s) => (s.roundTrip < best.roundTrip ? s : best)).offset;
  }

  function adopt(offset: number): void {
    const wasOff = Math.abs(offsetMs) > WARN_OFFSET_MS;
    // Leases are stored as whole milliseconds.
    offsetMs = Math.round(offset);
    if (Math.abs(offsetMs) > WARN_OFFSET_MS && !wasOff) {
      deps.logger.warn(
        { offset_ms: offsetMs },
        "this host's clock differs from the database server's by more than a second; leases use the server's time, but check the host's NTP",
      );
    }
  }

  adopt(await measure());
  const timer = setInterval(() => void clock.sync(), deps.resyncMs);
  timer.unref();

  const clock: DatabaseClock = {
    now: () => localNow() + offsetMs,
    get offsetMs() {
      return offsetMs;
    },
    async sync() {
      try {
        adopt(await measure());
      } catch (error) {
        deps.logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "could not read the database server's clock; leases keep the last measured offset",
        );
      }
    },
    stop: () => clearInterval(timer),
  };
  return clock;
}
