import { describe, expect, it } from "vitest";
import { type ClaimRound, WakePolicy } from "../../src/queue/wake-policy.js";

/** One step of a dispatcher's life, as the policy hears of it. */
type Step =
  | "announce"
  | "finish"
  | "poll"
  | { claim: number; limit?: number }
  | { begin: true }
  | { end: number; limit?: number };

const LIMIT = 4;

/** Plays the steps and says, after the last one, whether a claim is due. */
function play(steps: readonly Step[]): boolean {
  const policy = new WakePolicy();
  // A new dispatcher polls once at the start; the tables begin after that first, empty claim.
  policy.endClaim(policy.beginClaim(), 0, LIMIT);
  let open: ClaimRound | undefined;
  for (const step of steps) {
    if (step === "announce") policy.announced();
    else if (step === "finish") policy.finishedOne();
    else if (step === "poll") policy.pollElapsed();
    else if ("claim" in step) policy.endClaim(policy.beginClaim(), step.claim, step.limit ?? LIMIT);
    else if ("begin" in step) open = policy.beginClaim();
    else if (open !== undefined) {
      policy.endClaim(open, step.end, step.limit ?? LIMIT);
      open = undefined;
    }
  }
  return policy.claimDue;
}

describe("the dispatcher's wake policy", () => {
  it("claims once at the start, before anything is announced", () => {
    expect(new WakePolicy().claimDue).toBe(true);
  });

  const table: { when: string; steps: Step[]; due: boolean }[] = [
    { when: "nothing happened since the last claim", steps: [], due: false },
    { when: "an update was announced", steps: ["announce"], due: true },
    { when: "the announced update was claimed", steps: ["announce", { claim: 1 }], due: false },
    { when: "the poll interval passed", steps: ["poll"], due: true },
    { when: "a poll found less than it could take", steps: ["poll", { claim: 2 }], due: false },
    {
      when: "a poll filled its batch: more may wait",
      steps: ["poll", { claim: LIMIT }],
      due: true,
    },
    {
      when: "two announced, one claim took both",
      steps: ["announce", "announce", { claim: 2 }],
      due: false,
    },
    {
      when: "an announced update was held back (its chat busy), nothing finished yet",
      steps: ["announce", { claim: 0 }],
      due: false,
    },
    {
      when: "a held-back chat finished a run",
      steps: ["announce", { claim: 0 }, "finish"],
      due: true,
    },
    {
      when: "a run finished after an announced claim: an update of its chat may wait behind it",
      steps: ["announce", { claim: 1 }, "finish"],
      due: true,
    },
    {
      when: "a run finished with nothing held back",
      steps: ["poll", { claim: 1 }, "finish"],
      due: false,
    },
    {
      when: "a run finished while a claim was under way: the claim may have missed what it freed",
      steps: ["poll", { begin: true }, "finish", { end: 0 }],
      due: true,
    },
    {
      when: "an update was announced while a claim was under way",
      steps: ["poll", { begin: true }, "announce", { end: 0 }],
      due: true,
    },
    {
      when: "a recheck after a finish found one: its chat may hold more, so wait for the next finish",
      steps: ["announce", { claim: 0 }, "finish", { claim: 1 }],
      due: false,
    },
    {
      when: "…and that next finish comes",
      steps: ["announce", { claim: 0 }, "finish", { claim: 1 }, "finish"],
      due: true,
    },
    {
      when: "a recheck after a finish found nothing",
      steps: ["announce", { claim: 0 }, "finish", { claim: 0 }, "finish"],
      due: false,
    },
  ];

  it.each(table)("is $due when $when", ({ steps, due }) => {
    expect(play(steps)).toBe(due);
  });
});
