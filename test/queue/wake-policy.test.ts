import { describe, expect, it } from "vitest";
import { type ClaimRound, WakePolicy } from "../../src/queue/wake-policy.js";

/**
 * One step of a dispatcher's life, as the policy hears of it. Chats are letters: "announce a" is
 * an update of chat a stored here, "announce" one of no chat; a claim lists the chats of the
 * updates it took.
 */
type Step =
  | `announce${"" | ` ${string}`}`
  | `finish ${string}`
  | "poll"
  | { claim: string[]; limit?: number }
  | { begin: true }
  | { end: string[]; limit?: number }
  | { failed: true };

const LIMIT = 4;

/** Plays the steps and says, after the last one, whether a claim is due. */
function play(steps: readonly Step[]): boolean {
  const policy = new WakePolicy();
  // A new dispatcher polls once at the start; the tables begin after that first, empty claim.
  policy.endClaim(policy.beginClaim(), [], LIMIT);
  let open: ClaimRound | undefined;
  for (const step of steps) {
    if (step === "announce") policy.announced(null);
    else if (step === "poll") policy.pollElapsed();
    else if (typeof step === "string") {
      const [verb, chat] = step.split(" ") as [string, string];
      if (verb === "announce") policy.announced(chat);
      else policy.finishedOne(chat);
    } else if ("claim" in step) {
      policy.endClaim(policy.beginClaim(), step.claim, step.limit ?? LIMIT);
    } else if ("begin" in step) open = policy.beginClaim();
    else if ("failed" in step) {
      if (open !== undefined) policy.claimFailed(open);
      open = undefined;
    } else if (open !== undefined) {
      policy.endClaim(open, step.end, step.limit ?? LIMIT);
      open = undefined;
    }
  }
  return policy.claimDue;
}

/** Chat x holds two behind its run; the run ends while a claim (for chat b) takes x's next. */
const NEXT_TAKEN_AS_RUN_ENDED: Step[] = [
  "announce x",
  "announce x",
  "announce x",
  { claim: ["x"] },
  "announce b",
  { begin: true },
  "finish x",
  { end: ["b", "x"] },
];

describe("the dispatcher's wake policy", () => {
  it("claims once at the start, before anything is announced", () => {
    expect(new WakePolicy().claimDue).toBe(true);
  });

  const table: { when: string; steps: Step[]; due: boolean }[] = [
    { when: "nothing happened since the last claim", steps: [], due: false },
    { when: "an update was announced", steps: ["announce a"], due: true },
    {
      when: "the announced update was claimed",
      steps: ["announce a", { claim: ["a"] }],
      due: false,
    },
    { when: "the poll interval passed", steps: ["poll"], due: true },
    {
      when: "a poll found less than it could take",
      steps: ["poll", { claim: ["a", "b"] }],
      due: false,
    },
    {
      when: "a poll filled its batch: more may wait",
      steps: ["poll", { claim: ["a", "b", "c", "d"] }],
      due: true,
    },
    {
      when: "two announced, one claim took both",
      steps: ["announce a", "announce b", { claim: ["a", "b"] }],
      due: false,
    },
    {
      when: "an announced update was held back (its chat busy), nothing finished yet",
      steps: ["announce a", { claim: ["a"] }, "announce a", { claim: [] }],
      due: false,
    },
    {
      when: "a chat holding an update back finished its run",
      steps: ["announce a", { claim: ["a"] }, "announce a", { claim: [] }, "finish a"],
      due: true,
    },
    {
      when: "two of a chat announced, one claimed, and its run finished",
      steps: ["announce a", "announce a", { claim: ["a"] }, "finish a"],
      due: true,
    },
    {
      when: "a chat's only update ran and finished: nothing waits behind it",
      steps: ["announce a", { claim: ["a"] }, "finish a"],
      due: false,
    },
    {
      when: "another chat finished, while a chat holds an update back",
      steps: ["announce a", "announce a", "announce b", { claim: ["a", "b"] }, "finish b"],
      due: false,
    },
    {
      when: "another chat finished first, and then the chat holding an update back",
      steps: [
        "announce a",
        "announce a",
        "announce b",
        { claim: ["a", "b"] },
        "finish b",
        "finish a",
      ],
      due: true,
    },
    {
      when: "a poll found a chat's update: it may hold more, so look when its run ends",
      steps: ["poll", { claim: ["a"] }, "finish a"],
      due: true,
    },
    {
      when: "the held-back chat's run finished while a claim was under way: it may have missed it",
      steps: [
        "announce a",
        { claim: ["a"] },
        "announce a",
        { begin: true },
        "finish a",
        { end: [] },
      ],
      due: true,
    },
    {
      when: "an unrelated run finished while a claim was under way",
      steps: ["announce b", { claim: ["b"] }, "poll", { begin: true }, "finish b", { end: [] }],
      due: false,
    },
    {
      when: "an update was announced while a claim was under way",
      steps: ["poll", { begin: true }, "announce a", { end: [] }],
      due: true,
    },
    {
      when: "a recheck after a finish found one: its chat may hold more, so wait for the next finish",
      steps: ["announce a", "announce a", { claim: ["a"] }, "finish a", { claim: ["a"] }],
      due: false,
    },
    {
      when: "…and that next finish comes",
      steps: [
        "announce a",
        "announce a",
        { claim: ["a"] },
        "finish a",
        { claim: ["a"] },
        "finish a",
      ],
      due: true,
    },
    {
      when: "a recheck after a finish found nothing",
      steps: ["announce a", "announce a", { claim: ["a"] }, "finish a", { claim: [] }],
      due: false,
    },
    { when: "an update of no chat was announced", steps: ["announce"], due: true },
    {
      when: "a claim looked for an update of no chat: no run holds it back",
      steps: ["announce b", { claim: ["b"] }, "announce", { claim: [] }, "finish b"],
      due: false,
    },
    {
      when: "a recheck filled the batch before another chat's announced update was looked at",
      steps: [
        "announce y",
        "announce y",
        "announce z",
        { claim: ["y", "z"], limit: 3 },
        "announce w",
        { claim: ["w"], limit: 1 },
        "announce x",
        "finish y",
        { claim: ["y"], limit: 1 },
      ],
      due: true,
    },
    {
      when: "a claim failed: what it was asked for is still to look for",
      steps: ["announce f", "announce f", { begin: true }, { failed: true }],
      due: true,
    },
    {
      when: "after a failed claim, the chat it then found still holds one back",
      steps: [
        "announce f",
        "announce f",
        { begin: true },
        { failed: true },
        { claim: ["f"] },
        "finish f",
      ],
      due: true,
    },
    {
      when: "a chat held back by something elsewhere (an album arriving) ran here, and finished",
      steps: ["announce x", { claim: [] }, "announce x", { claim: ["x"] }, "finish x"],
      due: true,
    },
    {
      when: "a claim took a chat's next update as its run ended",
      steps: NEXT_TAKEN_AS_RUN_ENDED,
      due: false,
    },
    {
      when: "…and, after a claim that found nothing, that chat's next run ends: its third may wait",
      steps: [...NEXT_TAKEN_AS_RUN_ENDED, { claim: [] }, "finish x"],
      due: true,
    },
    {
      when: "a poll filled its batch, and a chat it found finished after the poll found no more",
      steps: ["poll", { claim: ["a", "b", "c", "d"] }, { claim: [] }, "finish a"],
      due: true,
    },
    {
      when: "a full batch left an announced chat unlooked at",
      steps: ["announce e", "announce e", { claim: ["a", "b", "c", "e"] }, "finish e"],
      due: true,
    },
  ];

  it.each(table)("is $due when $when", ({ steps, due }) => {
    expect(play(steps)).toBe(due);
  });
});
