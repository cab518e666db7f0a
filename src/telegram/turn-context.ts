import { type Api, Context } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { Lease } from "../queue/inbox.js";
import { routeUpdate } from "./access.js";
import { threadOfMessage } from "./topics.js";

/**
 * What every handler of the bot knows of the update it runs: the inbox lease it runs under (each
 * write and each send checks it first), the conversation, and the topic answers go to.
 */
export type TurnFlavor = {
  readonly lease: Lease;
  /** The conversation key (src/scope/conversation-key.ts). */
  readonly conversation: string;
  /** The topic the update came from, where its answers go; undefined outside topics. */
  readonly thread: number | undefined;
  /**
   * Leaves the answer to run once grammY's middleware has returned, and the update is not done
   * until it has. Awaited inside a handler, the answer would hold every composer's frames for the
   * whole of Gemini's reply (docs/decisions/0011-cpu-per-turn.md). One per update.
   */
  readonly answerAfter: (answer: () => Promise<unknown>) => void;
};

export type TurnContext = Context & TurnFlavor;

/**
 * The context of an update the inbox hands over with its lease; undefined when the update is not
 * to run. The ingest stored it by the same rule (access.ts), so this turns away only what the
 * allowlist no longer lets in (ALLOWED_USER_IDS changed since): the bot stays safe on its own.
 */
export function turnContext(
  update: Update,
  api: Api,
  me: UserFromGetMe,
  lease: Lease,
  allowed: ReadonlySet<number>,
  answerAfter: TurnFlavor["answerAfter"],
): TurnContext | undefined {
  const route = routeUpdate(update, allowed, me);
  if (route.action !== "run") return undefined;
  const ctx = new Context(update, api, me);
  const flavor: TurnFlavor = {
    lease,
    conversation: route.conversation,
    thread: threadOfMessage(ctx.msg),
    answerAfter,
  };
  return Object.assign(ctx, flavor);
}
