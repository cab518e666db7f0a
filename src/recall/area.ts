import { type RecallScope, scopeName, scopeOfKey } from "../scope/recall-scope.js";

/**
 * What one search may look through: the stored events of one recall scope (DESIGN.md, "Recall
 * scopes"), by the name `messages.scope` holds, less what the asking conversation's context still
 * holds. Every way of recalling (keyword search, vectors, memory files) takes one, so the scopes
 * are drawn here and nowhere else.
 */
export type RecallArea = {
  /** scopeName() of the scope. */
  scope: string;
  /** The asking conversation, whose events after `heldAfter` are in its context already. */
  conversation?: string;
  /** The last id its latest summary covers (0: the context holds the whole conversation). */
  heldAfter?: number;
};

/** The scope's name for a stored conversation key, as `messages.scope` and the folders spell it. */
export const scopeKeyOf = (conversation: string): string => scopeName(scopeOfKey(conversation));

/** The whole scope of a conversation, its own context included. */
export const scopeArea = (conversation: string): RecallArea => ({
  scope: scopeKeyOf(conversation),
});

/**
 * What a conversation may recall: its scope, less the context it holds (the latest summary and
 * every event after the range it covers), so that a search never answers with the very question.
 */
export const recallAreaOf = (
  asking: { chatId: string; scope: RecallScope },
  heldAfter: number,
): RecallArea => ({
  scope: scopeName(asking.scope),
  conversation: asking.chatId,
  heldAfter,
});
