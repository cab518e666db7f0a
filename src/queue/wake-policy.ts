/**
 * What one claim of the dispatcher was asked for, and what it knew when it began. The dispatcher
 * takes it from `beginClaim` and hands it back to `endClaim` with what the claim found.
 */
export type ClaimRound = {
  /** An update stored here was announced and not yet looked for. */
  readonly announced: boolean;
  /** Nobody announced anything and no held-back chat finished: the poll interval passed. */
  readonly polled: boolean;
  /** Announcements still pending when the claim began, so committed before it. */
  readonly seenArrivals: number;
  /** The chats of the updates announced before the claim began, with how many each. */
  readonly announcedChats: ReadonlyMap<string, number>;
  /** An update was announced without its chat (a task, an approval): any running chat may wait. */
  readonly announcedElsewhere: boolean;
  /** Chats that finished a run while they held updates back: this claim looks for their next. */
  readonly rechecked: ReadonlySet<string>;
};

/**
 * When the dispatcher asks the inbox for work. Each question is a database write, so it asks only
 * when something may be claimable: an update arrived here, a chat that held updates back finished
 * its run, or the poll interval passed (work from other replicas, expired leases, retries). Pure:
 * the dispatcher reports events, and this says whether a claim is due.
 *
 * Held-back updates are followed chat by chat: a chat whose run ends while another's update waits
 * behind it is looked at again, and only then, so a burst of chats with one message each costs no
 * claim per finished run, and one chat's finished run never stands in for another's.
 */
export class WakePolicy {
  private arrivals = 0;
  private announcedChats = new Map<string, number>();
  private announcedElsewhere = false;
  private pollDue = true;
  /** Chats with a run here, and how many (one, unless the inbox lost a lease meanwhile). */
  private readonly running = new Map<string, number>();
  /** Running chats that may have updates waiting behind their run. */
  private readonly holdingBack = new Set<string>();
  /** Chats whose run ended while they held updates back, for the next claim to look at. */
  private recheck = new Set<string>();
  /** Chats whose run ended while a claim was under way: it may not have seen them free. */
  private finishedDuringClaim: Set<string> | undefined;

  /** An update was stored in the inbox by this process, for `chat` when it is known. */
  announced(chat?: string | null): void {
    this.arrivals++;
    if (chat === undefined || chat === null) this.announcedElsewhere = true;
    else this.announcedChats.set(chat, (this.announcedChats.get(chat) ?? 0) + 1);
  }

  /** A run of `chat` ended. If updates of the chat waited behind it, one may run now. */
  finishedOne(chat: string | null): void {
    if (chat === null) return;
    const runs = (this.running.get(chat) ?? 1) - 1;
    if (runs > 0) this.running.set(chat, runs);
    else this.running.delete(chat);
    this.finishedDuringClaim?.add(chat);
    if (this.holdingBack.delete(chat)) this.recheck.add(chat);
  }

  /** The poll interval passed with nothing else waking the dispatcher. */
  pollElapsed(): void {
    this.pollDue = true;
  }

  /** Whether asking the inbox may find something. */
  get claimDue(): boolean {
    return this.arrivals > 0 || this.recheck.size > 0 || this.pollDue;
  }

  /** A claim begins: the reasons for it are used up. */
  beginClaim(): ClaimRound {
    const announced = this.arrivals > 0;
    this.arrivals = Math.max(0, this.arrivals - 1);
    const round: ClaimRound = {
      announced,
      polled: !announced && this.recheck.size === 0,
      seenArrivals: this.arrivals,
      announcedChats: this.announcedChats,
      announcedElsewhere: this.announcedElsewhere,
      rechecked: this.recheck,
    };
    this.announcedChats = new Map();
    this.announcedElsewhere = false;
    this.recheck = new Set();
    this.pollDue = false;
    this.finishedDuringClaim = new Set();
    return round;
  }

  /**
   * A claim took the updates of `foundChats` (one per update), when it could take up to `limit`.
   */
  endClaim(round: ClaimRound, foundChats: readonly (string | null)[], limit: number): void {
    const finishedDuringClaim = this.finishedDuringClaim ?? new Set<string>();
    this.finishedDuringClaim = undefined;
    const found = new Map<string, number>();
    for (const chat of foundChats) {
      if (chat === null) continue;
      found.set(chat, (found.get(chat) ?? 0) + 1);
      this.running.set(chat, (this.running.get(chat) ?? 0) + 1);
    }
    // A chat whose update a claim did not take, or that has more than it took, waits behind its
    // running update; if that run ended while the claim was under way, the claim may have missed
    // what it freed.
    const mayWait = (chat: string) => {
      if (this.running.has(chat)) this.holdingBack.add(chat);
      else if (finishedDuringClaim.has(chat)) this.recheck.add(chat);
    };
    if (foundChats.length < limit) {
      // Everything that could run was taken.
      for (const [chat, announced] of round.announcedChats) {
        if (announced > (found.get(chat) ?? 0)) mayWait(chat);
      }
      // A chat found after its run ended, or by a poll, may hold more: look again when it ends.
      for (const chat of found.keys()) {
        if (round.rechecked.has(chat) || round.polled) mayWait(chat);
      }
      if (round.announcedElsewhere) for (const chat of this.running.keys()) mayWait(chat);
      for (const chat of finishedDuringClaim) {
        if (round.announcedElsewhere && !this.running.has(chat)) this.recheck.add(chat);
      }
      // Updates announced while the claim ran may have come too late for it: they stay.
      this.arrivals -= Math.min(this.arrivals, round.seenArrivals);
      return;
    }
    // The claim took all it could: what it did not get to is still to look at.
    for (const [chat, announced] of round.announcedChats) {
      const left = announced - (found.get(chat) ?? 0);
      if (left > 0) this.announcedChats.set(chat, (this.announcedChats.get(chat) ?? 0) + left);
    }
    this.announcedElsewhere ||= round.announcedElsewhere;
    for (const chat of round.rechecked) {
      if (found.has(chat)) mayWait(chat);
      else this.recheck.add(chat);
    }
    // Work found by a poll (nobody announced it) may not come alone: claim until none is left.
    if (round.polled) this.pollDue = true;
  }
}
