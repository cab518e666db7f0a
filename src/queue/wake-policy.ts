/**
 * What one claim of the dispatcher was asked for, and what it knew when it began. The dispatcher
 * takes it from `beginClaim` and hands it back to `endClaim` with what the claim found.
 */
export type ClaimRound = {
  /** An update stored here was announced and not yet looked for. */
  readonly announced: boolean;
  /** A chat that held updates back finished one. */
  readonly afterFinish: boolean;
  /** Nobody announced anything: the poll interval passed. */
  readonly polled: boolean;
  /** Runs finished before the claim began. */
  readonly finishedBefore: number;
  /** Announcements still pending when the claim began, so committed before it. */
  readonly seenArrivals: number;
};

/**
 * When the dispatcher asks the inbox for work. Each question is a database write, so it asks only
 * when something may be claimable: an update arrived here, a chat that held updates back finished
 * one, or the poll interval passed (work from other replicas, expired leases, retries). Pure: the
 * dispatcher reports events, and this says whether a claim is due.
 */
export class WakePolicy {
  private arrivals = 0;
  private heldBack = false;
  private recheck = false;
  private pollDue = true;
  /** Finished runs so far: a claim that overlapped a finish may have missed what it freed. */
  private finished = 0;

  /** An update was stored in the inbox by this process. */
  announced(): void {
    this.arrivals++;
  }

  /** A run ended. A chat that held updates back may now release one. */
  finishedOne(): void {
    this.finished++;
    if (this.heldBack) {
      this.heldBack = false;
      this.recheck = true;
    }
  }

  /** The poll interval passed with nothing else waking the dispatcher. */
  pollElapsed(): void {
    this.pollDue = true;
  }

  /** Whether asking the inbox may find something. */
  get claimDue(): boolean {
    return this.arrivals > 0 || this.recheck || this.pollDue;
  }

  /** A claim begins: the reasons for it are used up. */
  beginClaim(): ClaimRound {
    const announced = this.arrivals > 0;
    const afterFinish = this.recheck;
    this.arrivals = Math.max(0, this.arrivals - 1);
    this.recheck = false;
    this.pollDue = false;
    return {
      announced,
      afterFinish,
      polled: !announced && !afterFinish,
      finishedBefore: this.finished,
      seenArrivals: this.arrivals,
    };
  }

  /** A claim found `found` updates, when it could take up to `limit`. */
  endClaim(round: ClaimRound, found: number, limit: number): void {
    if (found < limit) {
      // Everything that could run was taken. Announced updates that cannot run yet wait for their
      // chat's running update to finish; if one finished while this claim ran, the claim may not
      // have seen it: look again.
      if (round.announced) this.heldBack = true;
      if (this.finished !== round.finishedBefore) this.recheck = true;
      // Updates announced while the claim ran may have come too late for it: they stay.
      this.arrivals -= Math.min(this.arrivals, round.seenArrivals);
    } else if (round.polled) {
      // Work found by a poll (nobody announced it) may not come alone: claim until none is left.
      this.pollDue = true;
    }
    // A chat that held updates back may hold more: look again when the next one finishes.
    if (round.afterFinish && found > 0) this.heldBack = true;
  }
}
