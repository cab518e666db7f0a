import { z } from "zod";
import { scopeName } from "../scope/recall-scope.js";
import { defineTool, type Tool } from "../tools/registry.js";
import { PROFILE_BUDGET, type Profiles } from "./profile.js";

const factSchema = (what: string) =>
  z.object({
    fact: z.string().trim().min(1).max(PROFILE_BUDGET.factChars).describe(what),
  });

/** remember and forget: the model's hands on the profile of the conversation's recall scope. */
export function createProfileTools(deps: { profiles: Profiles }): Tool[] {
  const { profiles } = deps;
  const remember = defineTool({
    name: "remember",
    description:
      "Keeps a durable fact or preference about the user in your profile of this chat (shown to you " +
      "in every conversation of the same person in private, or of the same group): e.g. " +
      '"prefers metric units", "daughter Mia, born 2019". One short fact per call; only what ' +
      `stays true. The profile holds at most ${PROFILE_BUDGET.entries} facts and ` +
      `${PROFILE_BUDGET.totalChars} characters; when it is full, forget outdated facts first.`,
    schema: factSchema("The fact, one short sentence in the third person"),
    maxConcurrent: 1,
    async run(args, ctx) {
      const result = await profiles.remember(scopeName(ctx.scope), args.fact);
      if (result.status === "full") {
        throw new Error(
          `the profile is full (${result.entries} facts, ${result.chars} characters; at most ` +
            `${PROFILE_BUDGET.entries} and ${PROFILE_BUDGET.totalChars}): forget an outdated or ` +
            "less useful fact first, or merge two into one",
        );
      }
      return { remembered: result.entry.fact, alreadyKnown: result.status === "known" };
    },
  });
  const forget = defineTool({
    name: "forget",
    description:
      "Drops facts from your profile of this chat: every fact that contains all the words given. " +
      "Use it when the user asks you to forget something or a fact no longer holds.",
    schema: factSchema("The fact, or words that every fact to drop contains"),
    maxConcurrent: 1,
    async run(args, ctx) {
      const gone = await profiles.forget(scopeName(ctx.scope), args.fact);
      return gone.length > 0
        ? { forgotten: gone.map((e) => e.fact) }
        : { forgotten: [], note: "no fact in the profile has all these words" };
    },
  });
  return [remember, forget];
}
