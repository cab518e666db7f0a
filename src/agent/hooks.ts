import type { SessionEvent } from "../session/events.js";

import type { Usage } from "./model-client.js";

export type AgentHookEvents = {
  modelResponse: { chatId: string; event: SessionEvent; usage: Usage };
  /** Every Gemini call made for a conversation (turns' and summaries'), with what it used. */
  modelCall: { chatId: string; model: string; usage: Usage };
  toolCall: { chatId: string; name: string; args: Record<string, unknown> };
  toolResult: {
    chatId: string;
    name: string;
    args: Record<string, unknown>;
    ok: boolean;
    response: Record<string, unknown>;
  };
  turnEnd: {
    chatId: string;
    text: string;
    usage: Usage;
    modelCalls: number;
    toolCalls: number;
    /** Gemini's own searches, page reads and code runs (not in MAX_TOOL_CALLS_PER_TURN). */
    serverToolCalls: number;
  };
  compaction: {
    chatId: string;
    summarizedEvents: number;
    eventsBefore: number;
    eventsAfter: number;
    tokensBefore: number;
    tokensAfter: number;
    durationMs: number;
  };
  /**
   * The first words of an answer became visible in the chat (a draft, an edited message, or the
   * final message), `seconds` after the turn began.
   */
  firstVisibleText: { chatId: string; seconds: number };
  /** schedule_task added a task whose first run is due at `firstRunAt` (ms). */
  taskScheduled: { chatId: string; firstRunAt: number };
};

export type HookName = keyof AgentHookEvents;
type Listener<K extends HookName> = (event: AgentHookEvents[K]) => void;

/**
 * Typed hooks the Telegram layer and the terminal chat subscribe to. A listener that throws is
 * reported, not allowed to break the turn that emitted the event.
 */
export class AgentHooks {
  private readonly listeners: { [K in HookName]?: Listener<K>[] } = {};

  constructor(
    private readonly onListenerError: (name: HookName, error: unknown) => void = () => {},
  ) {}

  on<K extends HookName>(name: K, listener: Listener<K>): () => void {
    const list = (this.listeners[name] ?? []) as Listener<K>[];
    this.listeners[name] = list as (typeof this.listeners)[K];
    list.push(listener);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    };
  }

  emit<K extends HookName>(name: K, event: AgentHookEvents[K]): void {
    for (const listener of (this.listeners[name] ?? []) as Listener<K>[]) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(name, error);
      }
    }
  }
}
