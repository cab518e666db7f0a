import type { Logger } from "../logger.js";
import { parseConversationKey } from "../scope/conversation-key.js";
import { type RecallScope, scopeName } from "../scope/recall-scope.js";
import type { FunctionCallPart } from "../session/events.js";
import type { PolicyOf } from "./policy.js";
import type { Approval, ApprovalStore, Decision } from "./store.js";

/** What the model reads when the user pressed Deny. */
export const USER_DECLINED = "the user declined this call, so it did not run; carry on without it";
export const NOT_ANSWERED =
  "the user did not answer the request to run this call in time, so it did not run; carry on without it";
export const SUPERSEDED =
  "not run: the user wrote a new message instead of answering the request to run this call";
export const POLICY_DENIED =
  "this tool is not allowed here (its policy is deny, set by whoever runs Koroku)";
export const NOBODY_TO_ASK =
  "not run: this tool runs only once the user allows it, and there is nobody here to ask";
export const RAN_BEFORE_CRASH =
  "interrupted: Koroku restarted while this call ran; it may or may not have run";

export type CallDecision = { kind: "run" } | { kind: "refuse"; error: string } | { kind: "stop" };

export type GateCheck =
  | { kind: "decided"; decisions: CallDecision[]; approvals: Approval[] }
  | { kind: "waiting"; pending: Approval[] };

/**
 * Asks the person at hand about one call and waits for the answer (the terminal, where someone
 * sits at the keyboard); "stop" when they stopped the answer instead.
 */
export type AskNow = (call: FunctionCallPart) => Promise<Decision | "stop">;

export type GateRequest = {
  conversation: string;
  scope: RecallScope;
  /** The stored model event whose calls these are. */
  eventId: number;
  /** The calls that are to run (budget and repeats decided already), by their place in the event. */
  calls: readonly { index: number; call: FunctionCallPart }[];
  askedBy: number | undefined;
  /**
   * For a conversation no Telegram chat has (the terminal's): asks at once, instead of storing a
   * request the buttons of a chat would answer.
   */
  ask?: AskNow;
};

export type ApprovalGate = ReturnType<typeof createApprovalGate>;

/**
 * Decides, for the calls of one model event, which run: by policy, by the scope's "always"
 * grants, and by the user's answers. A call to ask about that has no answer yet is stored as a
 * request, and the turn waits (it ends, and a continuation runs it once answered).
 */
export function createApprovalGate(deps: {
  store: ApprovalStore;
  policyOf: PolicyOf;
  timeoutMs: number;
  logger: Logger;
  now?: () => number;
  /** Ends the conversation's waiting requests as superseded (and queues what shows it). */
  supersede(conversation: string): Promise<Approval[]>;
}) {
  const now = deps.now ?? Date.now;
  const { store } = deps;

  async function check(request: GateRequest): Promise<GateCheck> {
    const where = parseConversationKey(request.conversation);
    const scope = scopeName(request.scope);
    const known = new Map(
      (await store.ofEvent(request.conversation, request.eventId)).map((a) => [a.callIndex, a]),
    );
    const decisions: CallDecision[] = [];
    const toAsk: { index: number; call: FunctionCallPart }[] = [];
    let waiting = false;
    let stopped = false;
    for (const { index, call } of request.calls) {
      const policy = deps.policyOf(call.name);
      if (policy === "deny") {
        decisions.push({ kind: "refuse", error: POLICY_DENIED });
        continue;
      }
      if (policy === "allow") {
        decisions.push({ kind: "run" });
        continue;
      }
      if (!where) {
        // After a stop nothing more is asked: the turn ends.
        const decision: CallDecision = stopped
          ? { kind: "stop" }
          : await askNow(request.ask, scope, call);
        stopped ||= decision.kind === "stop";
        decisions.push(decision);
        continue;
      }
      const asked = known.get(index);
      if (!asked) {
        if (await store.hasGrant(scope, call.name)) decisions.push({ kind: "run" });
        else {
          toAsk.push({ index, call });
          waiting = true;
          decisions.push({ kind: "stop" });
        }
        continue;
      }
      const decision = decisionOf(asked);
      if (decision.kind === "wait") {
        waiting = true;
        decisions.push({ kind: "stop" });
      } else decisions.push(decision);
    }
    if (waiting) {
      if (where && toAsk.length > 0) {
        await store.request(
          toAsk.map(({ index, call }) => ({
            conversation: request.conversation,
            chatId: where.chatId,
            threadId: where.threadId,
            scope,
            eventId: request.eventId,
            callIndex: index,
            tool: call.name,
            args: call.args ?? {},
            askedBy: request.askedBy,
            expiresAt: now() + deps.timeoutMs,
          })),
        );
        deps.logger.info(
          { chat_id: request.conversation, tools: toAsk.map((c) => c.call.name) },
          "asked the user to approve tool calls",
        );
      }
      const all = await store.ofEvent(request.conversation, request.eventId);
      return { kind: "waiting", pending: all.filter((a) => a.status === "pending") };
    }
    return { kind: "decided", decisions, approvals: [...known.values()] };
  }

  async function askNow(
    ask: AskNow | undefined,
    scope: string,
    call: FunctionCallPart,
  ): Promise<CallDecision> {
    if (await store.hasGrant(scope, call.name)) return { kind: "run" };
    // Nobody to ask (no chat to show the request in, nobody at the keyboard): a tool that runs
    // only with consent does not run without it.
    if (!ask) return { kind: "refuse", error: NOBODY_TO_ASK };
    const answer = await ask(call);
    switch (answer) {
      case "always":
        await store.grant(scope, call.name, undefined);
        return { kind: "run" };
      case "allowed":
        return { kind: "run" };
      case "denied":
        return { kind: "refuse", error: USER_DECLINED };
      case "stop":
        return { kind: "stop" };
    }
  }

  function decisionOf(approval: Approval): CallDecision | { kind: "wait" } {
    switch (approval.status) {
      case "allowed":
      case "always":
        return approval.started ? { kind: "refuse", error: RAN_BEFORE_CRASH } : { kind: "run" };
      case "denied":
        return { kind: "refuse", error: USER_DECLINED };
      case "expired":
        return { kind: "refuse", error: NOT_ANSWERED };
      case "superseded":
        return { kind: "refuse", error: SUPERSEDED };
      case "cancelled":
        return { kind: "stop" };
      case "pending":
        // Past its time with nobody's answer: as good as expired, whatever the sweep did yet.
        return approval.expiresAt <= now()
          ? { kind: "refuse", error: NOT_ANSWERED }
          : { kind: "wait" };
    }
  }

  return {
    check,
    /** Whether an event's calls were asked about (a dangling batch that waits, not a crash). */
    hasRequests: async (conversation: string, eventId: number) =>
      (await store.ofEvent(conversation, eventId)).length > 0,
    /** A new message came while requests waited: they are left unanswered. */
    supersede: deps.supersede,
    /** The allowed calls about to run: a run after a crash must not run them again. */
    markStarted: (approvals: readonly Approval[]) => store.markStarted(approvals.map((a) => a.id)),
  };
}
