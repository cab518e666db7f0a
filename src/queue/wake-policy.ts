/**
 * What one claim of the dispatcher was asked for, and what it knew when it began. The dispatcher
 * takes it from `beginClaim` and hands it back to `endClaim` with what the claim found, or to
 * `claimFailed`.
 */
export type ClaimRound = {
  /** Nothing was announced and no chat holding updates back finished: the poll interval passed. */
  readonly polled: boolean;
  /** The chats of the updates announced before the claim began, with how many each. */
  readonly announcedChats: ReadonlyMap<string, number>;
  /** An update of no chat was announced: nothing holds it back. */
  readonly announcedWithoutChat: boolean;
  /** Chats that finished a run while they held updates back: this claim looks for their next. */
  readonly rechecked: ReadonlySet<string>;
};

/**
 * Chats remembered as held back by something that does not run here (an album still arriving, a
 * retry's delay, another replica's run), at most: past it the oldest are left to the poll.
 */
const MAX_BLOCKED_CHATS = 10_000;

/** Counts `n` more for `chat`. */
const addTo = (counts: Map<string, number>, chat: string, n: number) =>
  counts.set(chat, (counts.get(chat) ?? 0) + n);

/**
 * When the dispatcher asks the inbox for work. Each question is a database write, so it asks only
 * when something may be claimable: an update arrived here, a chat that held updates back finished
 * its run, or the poll interval passed (work from other replicas, expired leases, retries). Pure:
 * the dispatcher reports events, and this says whether a claim is due.
 *
 * Held-back updates are followed chat by chat: a chat whose run ends while another of its updates
 * waits behind it is looked at again, and only then, so a burst of chats with one message each
 * costs no claim per finished run, and one chat's finished run never stands in for another's.
 */
export class WakePolicy {
  private announcedChats = new Map<string, number>();
  private announcedWithoutChat = false;
  private pollDue = true;
  /** Chats with a run here, and how many (one, unless the inbox lost a lease meanwhile). */
  private readonly running = new Map<string, number>();
  /** Running chats that may have updates waiting behind their run. */
  private readonly holdingBack = new Set<string>();
  /** Chats whose announced update a claim left though nothing of theirs ran here. */
  private readonly blocked = new Set<string>();
  /** Chats whose run ended while they held updates back, for the next claim to look at. */
  private recheck = new Set<string>();
  /** Chats whose run ended while a claim was under way: it may not have seen them free. */
  private finishedDuringClaim: Set<string> | undefined;

  /** An update was stored in the inbox by this process, for `chat` (the inbox's chat id). */
  announced(chat: string | null): void {
    if (chat === null) this.announcedWithoutChat = true;
    else addTo(this.announcedChats, chat, 1);
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
    return (
      this.announcedChats.size > 0 ||
      this.announcedWithoutChat ||
      this.recheck.size > 0 ||
      this.pollDue
    );
  }

  /** A claim begins: the reasons for it are used up. */
  beginClaim(): ClaimRound {
    const round: ClaimRound = {
      polled:
        this.announcedChats.size === 0 && !this.announcedWithoutChat && this.recheck.size === 0,
      announcedChats: this.announcedChats,
      announcedWithoutChat: this.announcedWithoutChat,
      rechecked: this.recheck,
    };
    this.announcedChats = new Map();
    this.announcedWithoutChat = false;
    this.recheck = new Set();
    this.pollDue = false;
    this.finishedDuringClaim = new Set();
    return round;
  }

  /** The claim did not reach the inbox: what it was for is still to do. */
  claimFailed(round: ClaimRound): void {
    this.finishedDuringClaim = undefined;
    this.stillToLookFor(round, new Map());
    if (round.polled) this.pollDue = true;
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
      addTo(found, chat, 1);
      addTo(this.running, chat, 1);
    }
    for (const chat of found.keys()) {
      // Its next update is running now: a recheck for the run that ended meanwhile is done.
      const finishedMeanwhile = this.recheck.delete(chat);
      const wasBlocked = this.blocked.delete(chat);
      // A chat found after its run ended, by a poll, after something held it back elsewhere, or
      // as its run ended meanwhile, may hold more: look again when this run ends.
      if (round.rechecked.has(chat) || round.polled || wasBlocked || finishedMeanwhile) {
        this.holdingBack.add(chat);
      }
    }
    if (foundChats.length >= limit) {
      // The claim took all it could: what it did not get to is still to look for.
      this.stillToLookFor(round, found);
      if (round.polled) this.pollDue = true;
      return;
    }
    // Everything that could run was taken. A chat announced more often than it was found waits
    // behind its running update, or behind something elsewhere; if its run ended while the claim
    // was under way, the claim may have missed what that freed.
    const waits = (chat: string, elsewhere: boolean) => {
      if (this.running.has(chat)) this.holdingBack.add(chat);
      else if (finishedDuringClaim.has(chat)) this.recheck.add(chat);
      else if (elsewhere) this.remember(chat);
    };
    for (const [chat, announced] of round.announcedChats) {
      if (announced > (found.get(chat) ?? 0)) waits(chat, true);
    }
    for (const chat of round.rechecked) if (!found.has(chat)) waits(chat, false);
  }

  /** Puts back what a claim was asked to look for and did not find. */
  private stillToLookFor(round: ClaimRound, found: ReadonlyMap<string, number>): void {
    for (const [chat, announced] of round.announcedChats) {
      const left = announced - (found.get(chat) ?? 0);
      if (left > 0) addTo(this.announcedChats, chat, left);
    }
    this.announcedWithoutChat ||= round.announcedWithoutChat;
    for (const chat of round.rechecked) if (!found.has(chat)) this.recheck.add(chat);
  }

  private remember(chat: string): void {
    this.blocked.delete(chat);
    this.blocked.add(chat);
    if (this.blocked.size > MAX_BLOCKED_CHATS) {
      const oldest = this.blocked.values().next().value;
      if (oldest !== undefined) this.blocked.delete(oldest);
    }
  }
}
