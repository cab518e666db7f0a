import type { AgentHooks } from "../agent/hooks.js";
import type { Logger } from "../logger.js";
import type { UsageStore } from "./usage-store.js";

/**
 * Stores the tokens of every model call the agent reports. The write runs beside the turn: a
 * failure costs an entry of /usage, never the answer.
 */
export function recordUsage(deps: {
  hooks: AgentHooks;
  store: UsageStore;
  logger: Logger;
  now?: () => Date;
}) {
  const now = deps.now ?? (() => new Date());
  const writes = new Set<Promise<void>>();
  deps.hooks.on("modelCall", ({ chatId, model, usage }) => {
    const write = deps.store
      .record(chatId, model, usage, now())
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, chat_id: chatId }, "could not store a model call's usage"),
      )
      .finally(() => writes.delete(write));
    writes.add(write);
  });
  return {
    /** Resolves once every write begun so far has ended (shutdown, tests). */
    async flush(): Promise<void> {
      await Promise.all([...writes]);
    },
  };
}
