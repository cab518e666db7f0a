import { scopeOfKey } from "../../src/scope/recall-scope.js";
import type { ToolContext } from "../../src/tools/registry.js";

/** A tool call's context in a conversation, its scope told by the key as the turn tells it. */
export const toolContext = (chatId: string, more: Omit<ToolContext, "chatId" | "scope"> = {}) => ({
  chatId,
  scope: scopeOfKey(chatId),
  ...more,
});
