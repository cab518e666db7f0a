import type { ModelClient } from "../agent/model-client.js";
import type { Logger } from "../logger.js";
import { scopeKeyOf } from "./area.js";
import type { Profiles } from "./profile.js";

export const CONSOLIDATION_INSTRUCTION = [
  "You keep the profile an assistant, Koroku, has of its user: short durable facts and preferences.",
  "You are given the profile and the summary of a conversation that just ended.",
  "Write the profile anew: merge duplicates, drop what the summary shows is no longer true, and add durable facts or preferences the summary states plainly (not passing details, not tasks).",
  "Keep every other fact exactly as written. One fact per line, no numbering, no bullets, nothing else.",
].join(" ");

/**
 * Compaction's part in the profile: after a summary is written, the summary model rewrites the
 * scope's profile from it (only when the scope has one: an empty profile costs no call). A failed
 * or empty answer leaves the profile as it was, and so does a profile that changed while the
 * model wrote (a fact forgotten or remembered meanwhile).
 */
export function createConsolidation(deps: {
  profiles: Profiles;
  model: ModelClient;
  logger: Logger;
  settings: { model: string };
  /** Told of the call's tokens, as every model call is. */
  onUsage?(
    conversation: string,
    usage: Awaited<ReturnType<ModelClient["generate"]>>["usage"],
  ): void;
}) {
  /** After `conversation` was compacted into `summary`. */
  return async function consolidate(conversation: string, summary: string): Promise<void> {
    const scope = scopeKeyOf(conversation);
    const entries = await deps.profiles.list(scope);
    if (entries.length === 0) return;
    try {
      const result = await deps.model.generate({
        model: deps.settings.model,
        systemInstruction: CONSOLIDATION_INSTRUCTION,
        contents: [
          {
            role: "user",
            parts: [
              {
                text: `[Profile]\n${entries.map((e) => e.fact).join("\n")}\n\n[Summary]\n${summary}\n\nWrite the profile now.`,
              },
            ],
          },
        ],
      });
      deps.onUsage?.(conversation, result.usage);
      const lines = (result.content.parts ?? [])
        .filter((p) => !p.thought && p.text)
        .map((p) => p.text)
        .join("")
        .split("\n")
        .map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, ""));
      const after = await deps.profiles.replace(scope, lines, entries);
      if (!after) {
        deps.logger.info(
          { scope },
          "the profile changed while it was consolidated; it stays as it is, for the next compaction",
        );
        return;
      }
      deps.logger.info(
        { scope, entries_before: entries.length, entries_after: after.length },
        "consolidated the profile after a compaction",
      );
    } catch (error) {
      deps.logger.warn(
        { err: error, scope },
        "could not consolidate the profile; it stays as it was",
      );
    }
  };
}
