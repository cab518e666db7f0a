import type { ApprovalGate, AskNow, CallDecision } from "../approvals/gate.js";
import type { Approval } from "../approvals/store.js";
import type { BuiltinTool, ThinkingLevel } from "../config.js";
import type { Logger } from "../logger.js";
import { unlessStopped } from "../retry/unless-stopped.js";
import { type ChatType, chatTypeOfKey, type RecallScope, scopeOf } from "../scope/recall-scope.js";
import type { NewAttachment, StoredAttachment } from "../session/attachments.js";
import {
  codeOutputsOf,
  type EventPart,
  type FunctionCallPart,
  fromContent,
  functionCallsOf,
  type GroundingPart,
  isRealUserMessage,
  type MediaPart,
  type SessionEvent,
  type StoredFiles,
  textOf,
  UnsupportedPartError,
} from "../session/events.js";
import { refusalEvent } from "../session/refusals.js";
import {
  type ChatContext,
  EventTooLargeError,
  MAX_EVENT_BYTES,
  type NewSessionEvent,
  type SessionStore,
  type StoredSession,
  withAppended,
} from "../session/store.js";
import type {
  FileToSend,
  SentAs,
  ToolContext,
  ToolOutcome,
  ToolRegistry,
} from "../tools/registry.js";
import { storeAnswerFiles } from "./answer-files.js";
import type { CompactionOutcome } from "./compaction.js";
import { contentsFor } from "./contents.js";
import { judgeAnswer, MALFORMED_TWICE } from "./finish-reasons.js";
import {
  exceedsContext,
  GeminiAnswerTooLargeError,
  GeminiRefusedError,
  GeminiUnsupportedAnswerError,
} from "./gemini-errors.js";
import {
  BUDGET_EXHAUSTED,
  danglingCalls,
  planCalls,
  repairDanglingCalls,
  repeatRefusal,
  responsePart,
  toolCallsSinceUserMessage,
} from "./guardrail.js";
import type { AgentHooks } from "./hooks.js";
import {
  addUsage,
  type GenerateResult,
  type ModelClient,
  NO_USAGE,
  type Usage,
} from "./model-client.js";
import {
  messageTimeFormat,
  sentAtNote,
  systemInstruction,
  toolBudgetInstruction,
} from "./prompts.js";
import { type MediaSource, retryingLostFiles } from "./request-media.js";
import { sourcesBlock, sourcesOf } from "./sources.js";
import { runInOrder } from "./tool-batch.js";
import type { SentToolFile } from "./tool-files.js";

export interface Compactor {
  /**
   * Compacts the chat when its context is over budget, running `guard` before it writes; the
   * outcome holds the context to use. `stop` aborts the summary call (nothing is stored then).
   */
  maybeCompact(
    chatId: string,
    context: ChatContext,
    guard?: () => Promise<void>,
    stop?: AbortSignal,
    /** However small the context measures: Gemini said it was too long for the model. */
    force?: boolean,
  ): Promise<CompactionOutcome>;
}

export type AgentDeps = {
  store: SessionStore;
  /** How media parts reach Gemini: bytes read when a request is built, or uploaded files. */
  media: MediaSource;
  /** Stores a file of a model answer as an attachment of the conversation. */
  saveFile(chatId: string, file: NewAttachment): Promise<StoredAttachment>;
  model: ModelClient;
  tools: ToolRegistry;
  hooks: AgentHooks;
  logger: Logger;
  settings: {
    model: string;
    maxToolCallsPerTurn: number;
    thinkingLevel?: ThinkingLevel;
    /** Gemini's server-side tools, offered whenever Koroku's own are. */
    builtinTools?: readonly BuiltinTool[];
  };
  compactor?: Compactor;
  /** Which calls run without asking; absent, every call runs (tests of the loop alone). */
  approvals?: ApprovalGate;
  /** IANA zone of the system instruction and of the stamps on the user's messages. */
  timeZone?: string;
  /**
   * What the system instruction adds for the conversation's recall scope (its profile): the
   * same text while the profile stays the same, so the cached prefix holds.
   */
  scopeInstruction?(scope: RecallScope): Promise<string>;
};

export type TurnInput = {
  /** What the user wrote (a caption, for media); may be empty when media come alone. */
  text: string;
  /** Files of the message, already stored as attachments. */
  media?: readonly MediaPart[];
  updateId?: number;
  /**
   * Called before each model call and each write of the turn; a throw stops the turn there. The
   * Telegram service passes its inbox lease: a worker that lost the update to another one must
   * not add to the chat.
   */
  guard?: () => Promise<void>;
  /** Told as the answer is written and while tools run (drafts, the terminal). */
  progress?: TurnProgress;
  /**
   * Aborted when the user stops the answer: the model stream ends, no further model or tool call
   * starts, and what was written so far is stored as the answer, marked as stopped.
   */
  stop?: AbortSignal;
  /**
   * Sends a file to the conversation's chat and topic (send_file); absent in the terminal. `sent`
   * is the record of the call once the file went out as `sentAs`, to keep as Telegram takes it.
   */
  sendFile?: (file: FileToSend, sent: (sentAs: SentAs) => SentToolFile) => Promise<SentAs>;
  /**
   * The files tools sent in earlier runs of this update, as `sendFile` recorded them: a call a
   * crash cut off is answered with what it did.
   */
  sentToolFiles?: readonly SentToolFile[];
  /**
   * The chat's type, which with the key decides the recall scope the tools work in; absent, the
   * key tells it (a scheduled run knows its conversation by the key alone).
   */
  chatType?: ChatType;
  /** Marks the input as a scheduled task's, not something the user typed. */
  origin?: "scheduled_task";
  /** Who asked (see ToolContext.askedBy). */
  askedBy?: number;
  /**
   * Asks the person at the keyboard about a call whose tool asks, and waits (the terminal). A
   * Telegram conversation needs none: its requests are stored and answered by buttons.
   */
  ask?: AskNow;
  /**
   * The answer, decided without the model (a plain reminder): it is stored as the model's turn
   * and returned, and no model is called.
   */
  answer?: string;
  /**
   * No new message: the turn goes on from calls that waited for the user's answer (an approval
   * was answered or expired). Nothing is stored for the input itself.
   */
  resume?: true;
};

export type TurnProgress = {
  /** The visible text of the model call being written, each time it grew. */
  text(text: string): void;
  /** The model call being written started over (a retry after a broken stream). */
  restart(): void;
  /** A tool is about to run; what the answer said before it is not the final answer. */
  tool(name: string, args: Record<string, unknown>): void;
};

/** Stored and shown when the user stopped an answer before any of it was written. */
export const STOPPED_EMPTY = "(stopped)";
/** What a call the user's stop kept from running answers, so the history stays paired. */
export const STOPPED_CALL = "not run: the user stopped the answer";

export type TurnResult = {
  /** What the user sees: the model's text without thought parts. */
  text: string;
  usage: Usage;
  modelCalls: number;
  toolCalls: number;
  /** Searches, page reads and code runs Gemini made itself (they do not count toward the budget). */
  serverToolCalls: number;
  /** True when the answer was already stored by an earlier, interrupted run of this update. */
  resumed: boolean;
  /** True when the user stopped the answer (`text` is what was written until then). */
  stopped?: true;
  /** Files the model made in this turn (images, code execution's charts), to send with `text`. */
  files: MediaPart[];
  /**
   * The turn waits for the user to allow or deny these calls (the requests still unanswered,
   * those not yet shown included); `text` is what the model said before them.
   */
  waiting?: Approval[];
  /** A resume that found nothing waiting (another run took it up): nothing to deliver. */
  idle?: true;
};

// After the budget is spent the model gets no tools; if it still answers with calls, a couple of
// refusals let it recover before we end the turn ourselves.
const EXTRA_ROUNDS_AFTER_BUDGET = 2;
const TOO_LARGE_OUTPUT = `the tool's output was larger than the ${MAX_EVENT_BYTES / (1024 * 1024)} MB a stored event may hold, so it was dropped`;

export type Agent = ReturnType<typeof createAgent>;

/**
 * The files a turn shows the user with its answer: the media parts of the model's events and the
 * pictures its tools made (generate_image, kept beside their calls' responses); thinking's images
 * and the voice notes of the answer (sent by the voice reply, after its words) left out.
 */
const answerFilesOf = (event: SessionEvent): MediaPart[] =>
  event.role === "model" || !isRealUserMessage(event)
    ? event.parts.filter(
        (part): part is MediaPart => part.kind === "media" && !part.thought && !part.spoken,
      )
    : [];

export function createAgent(deps: AgentDeps) {
  const { store, model, tools, hooks, settings } = deps;
  const timeZone = deps.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const instruction = systemInstruction(timeZone);
  const timeFormat = messageTimeFormat(timeZone);
  const sentAt = (createdAt: string) => sentAtNote(timeFormat.format(new Date(createdAt)));

  /** The model's answer as an event; its files are stored first (after `guard`). */
  async function modelEvent(
    chatId: string,
    result: GenerateResult,
    guard: (() => Promise<void>) | undefined,
  ): Promise<SessionEvent> {
    const parts = result.content.parts ?? [];
    let files: StoredFiles | undefined;
    if (parts.some((part) => part.inlineData)) {
      await guard?.();
      files = await storeAnswerFiles(parts, (file) => deps.saveFile(chatId, file));
    }
    try {
      const event = fromContent({ ...result.content, role: "model" }, files);
      if (result.cut) event.cut = true;
      const { metadata, urlContext } = result.grounding ?? {};
      if (metadata || urlContext) {
        event.parts.push({
          kind: "grounding",
          ...(metadata ? { metadata: metadata as Record<string, unknown> } : {}),
          ...(urlContext ? { urlContext: urlContext as Record<string, unknown> } : {}),
        });
      }
      return event;
    } catch (error) {
      if (error instanceof UnsupportedPartError)
        throw new GeminiUnsupportedAnswerError(error.message, error.field);
      throw error;
    }
  }

  /** A stopped answer keeps only the words the user saw: no thoughts, no calls left to run. */
  function stoppedEvent(written: string): SessionEvent {
    const text = written === "" ? STOPPED_EMPTY : written;
    return {
      v: 1,
      event_type: "session",
      role: "model",
      parts: [{ kind: "text", text }],
      stopped: true,
    };
  }

  function userEvent(input: TurnInput): SessionEvent {
    const media = input.media ?? [];
    // Gemini's advice: media before the words about them.
    const parts: EventPart[] = [...media];
    if (input.text !== "" || media.length === 0) parts.push({ kind: "text", text: input.text });
    const event: SessionEvent = { v: 1, event_type: "session", role: "user", parts };
    return input.origin ? { ...event, origin: input.origin } : event;
  }

  /** An earlier run of this update stored the user message (and maybe the answer) before dying. */
  function findResumed(context: ChatContext, updateId: number | undefined) {
    if (updateId === undefined) return undefined;
    const index = context.events.findIndex(
      (e) => e.updateId === updateId && isRealUserMessage(e.event),
    );
    if (index < 0) return undefined;
    const last = context.events.at(-1) as StoredSession;
    if (index < context.events.length - 1 && last.event.refused) {
      return { refused: last.event.refused.reason, files: [] };
    }
    const answered =
      index < context.events.length - 1 &&
      last.event.role === "model" &&
      functionCallsOf(last.event).length === 0;
    const files = context.events.slice(index + 1).flatMap((e) => answerFilesOf(e.event));
    return { answer: answered ? textOf(last.event.parts) : undefined, refused: undefined, files };
  }

  async function runTurn(chatId: string, input: TurnInput): Promise<TurnResult> {
    const log = deps.logger.child({ chat_id: chatId, update_id: input.updateId });
    const scope = scopeOf({ key: chatId, chatType: input.chatType ?? chatTypeOfKey(chatId) });
    const usage: Usage = { ...NO_USAGE };
    let modelCalls = 0;
    let toolCalls = 0;
    let serverToolCalls = 0;
    const grounding: GroundingPart[] = [];
    const append = async (items: readonly NewSessionEvent[]) => {
      await input.guard?.();
      return store.append(chatId, items);
    };

    let context = await store.loadContext(chatId);
    const resumed = findResumed(context, input.updateId);
    if (resumed?.refused !== undefined) {
      log.info("Gemini refused this update before a restart; telling the user again");
      throw new GeminiRefusedError(resumed.refused, 400, true);
    }
    if (resumed?.answer !== undefined) {
      log.info("answer was stored before a restart; delivering it without a new model call");
      const { answer: text, files } = resumed;
      return { text, usage, modelCalls, toolCalls, serverToolCalls, resumed: true, files };
    }
    const files = [...(resumed?.files ?? [])];
    const dangling = danglingCalls(context.events);
    // Calls that were asked about wait for (or got) the user's answer: they run, or are refused,
    // below. Others lost their run to a crash.
    const asked =
      dangling !== undefined &&
      deps.approvals !== undefined &&
      (await deps.approvals.hasRequests(chatId, dangling.id));
    const repair = asked ? undefined : repairDanglingCalls(context.events, input.sentToolFiles);
    if (repair) {
      log.warn({ calls: repair.toolCalls }, "completing function calls interrupted by a restart");
      context = withAppended(
        context,
        await append([{ event: repair.event, toolCalls: repair.toolCalls }]),
      );
    }
    // A new message while calls wait: their requests are left unanswered, and the message is
    // answered instead.
    if (asked && !resumed && !input.resume) {
      await input.guard?.();
      await deps.approvals?.supersede(chatId);
    }
    const end = (text: string): TurnResult => {
      hooks.emit("turnEnd", { chatId, text, usage, modelCalls, toolCalls, serverToolCalls });
      return {
        text,
        usage,
        modelCalls,
        toolCalls,
        serverToolCalls,
        resumed: resumed !== undefined,
        files,
      };
    };
    /** The model kept reaching for tools after the turn's budget was spent: the turn ends. */
    const endOverBudget = async (used: number): Promise<TurnResult> => {
      log.warn("model kept calling tools after its budget was spent; ending the turn");
      const text = `I stopped after ${used} tool calls, my limit for one message. Tell me whether to continue.`;
      await append([
        { event: { v: 1, event_type: "session", role: "model", parts: [{ kind: "text", text }] } },
      ]);
      return end(text);
    };
    const endStopped = async (written: string): Promise<TurnResult> => {
      const event = stoppedEvent(written);
      await append([{ event }]);
      return { ...end(textOf(event.parts)), stopped: true };
    };
    const toolContext: ToolContext = {
      chatId,
      scope,
      ...(input.stop ? { signal: input.stop } : {}),
      ...(input.origin ? { origin: input.origin } : {}),
      ...(input.askedBy === undefined ? {} : { askedBy: input.askedBy }),
    };
    const progress = input.progress;
    const stream = {
      onText: (text: string) => progress?.text(text),
      onRestart: () => progress?.restart(),
    };

    /**
     * Runs the calls of a stored model event, as far as the budget, repeats and approvals let
     * them, and stores their responses. A call still waiting for the user's answer leaves the
     * batch unrun (the turn waits); a stop while one waited ends the turn.
     */
    const runCalls = async (
      stored: StoredSession,
      remaining: number,
    ): Promise<"ran" | "stopped" | { waiting: Approval[] }> => {
      const calls = functionCallsOf(stored.event);
      const plan = planCalls(calls, remaining, context.events);
      const decisions = new Map<number, CallDecision>();
      if (deps.approvals) {
        const toCheck = calls.flatMap((call, index) =>
          plan[index]?.kind === "run" ? [{ index, call }] : [],
        );
        const checked = await deps.approvals.check({
          conversation: chatId,
          scope,
          eventId: stored.id,
          calls: toCheck,
          askedBy: input.askedBy,
          ask: input.ask,
        });
        if (checked.kind === "waiting") return { waiting: checked.pending };
        toCheck.forEach(({ index }, i) => {
          decisions.set(index, checked.decisions[i] ?? { kind: "run" });
        });
        if ([...decisions.values()].some((d) => d.kind === "stop")) {
          const stopped = calls.map((call) => responsePart(call, { error: STOPPED_CALL }));
          const event = { v: 1 as const, event_type: "session" as const, role: "user" as const };
          context = withAppended(
            context,
            await append([{ event: { ...event, parts: stopped }, toolCalls: 0 }]),
          );
          return "stopped";
        }
        const approved = checked.approvals.filter(
          (a) => decisions.get(a.callIndex)?.kind === "run",
        );
        if (approved.length > 0) {
          await input.guard?.();
          await deps.approvals.markStarted(approved);
        }
      }
      /** The context of one call: a file it sends is recorded with the call (see SentToolFile). */
      const contextOf = (call: FunctionCallPart): ToolContext => {
        const send = input.sendFile;
        if (!send) return toolContext;
        const index = calls.indexOf(call);
        return {
          ...toolContext,
          sendFile: (file, outcome) =>
            send(file, (sentAs) => ({
              event: stored.id,
              call: index,
              ...outcome(sentAs).outcome(),
            })),
        };
      };
      const refusalOf = (index: number) => {
        const decision = decisions.get(index);
        return decision?.kind === "refuse" ? decision.error : undefined;
      };
      const toRun = calls.filter((_, i) => plan[i]?.kind === "run" && refusalOf(i) === undefined);
      const outcomes = await runInOrder(
        toRun,
        (call) => call.name,
        (name) => tools.concurrencyOf(name),
        async (
          call,
        ): Promise<
          Pick<ToolOutcome, "response"> & {
            files?: MediaPart[];
            media?: MediaPart[];
            made?: boolean;
          }
        > => {
          if (input.stop?.aborted) return { response: { error: STOPPED_CALL } };
          const args = call.args ?? {};
          hooks.emit("toolCall", { chatId, name: call.name, args });
          progress?.tool(call.name, args);
          const outcome = await tools.execute(call.name, args, contextOf(call));
          hooks.emit("toolResult", { chatId, name: call.name, args, ...outcome });
          return outcome;
        },
      );
      const responses: Record<string, unknown>[] = [];
      const sent = new Map<number, MediaPart[]>();
      // Files of results the model sees, after the responses in the same turn: pictures a tool
      // made (generate_image) and an MCP tool's images. The answer shows them too (answerFilesOf).
      const seen: MediaPart[] = [];
      const made: MediaPart[] = [];
      let ran = 0;
      for (const [i, step] of plan.entries()) {
        const refused = refusalOf(i);
        if (step.kind === "run" && refused !== undefined) responses.push({ error: refused });
        else if (step.kind === "run") {
          const outcome = outcomes[ran++];
          responses.push(outcome?.response ?? {});
          if (outcome?.files && outcome.made) made.push(...outcome.files);
          else if (outcome?.files) sent.set(i, outcome.files);
          if (outcome?.media) seen.push(...outcome.media);
        } else if (step.kind === "budget") responses.push({ error: BUDGET_EXHAUSTED });
        else responses.push(repeatRefusal("index" in step ? responses[step.index] : step.earlier));
        if (step.kind === "repeat") log.warn({ tool: calls[i]?.name }, "refused a repeated call");
      }
      const executed = plan.filter((step) => step.kind !== "budget").length;
      toolCalls += executed;
      const responsesEvent = (outputs: readonly Record<string, unknown>[]) => [
        {
          event: {
            v: 1 as const,
            event_type: "session" as const,
            role: "user" as const,
            parts: [
              ...calls.map((call, i) => responsePart(call, outputs[i] ?? {}, sent.get(i))),
              ...made,
              ...(outputs === responses ? seen : []),
            ],
          },
          toolCalls: executed,
        },
      ];
      const storedResponses = await append(responsesEvent(responses)).catch((error: unknown) => {
        if (!(error instanceof EventTooLargeError)) throw error;
        // The calls were made; the model is told their outputs were too large to keep.
        log.warn({ bytes: error.bytes }, "tool responses too large to store; replaced by an error");
        return append(responsesEvent(responses.map(() => ({ error: TOO_LARGE_OUTPUT }))));
      });
      context = withAppended(context, storedResponses);
      files.push(...made, ...seen);
      return "ran";
    };

    if (asked) {
      const used = toolCallsSinceUserMessage(context.events);
      const ran = await runCalls(dangling, settings.maxToolCallsPerTurn - used);
      if (ran === "stopped") return endStopped("");
      if (ran !== "ran") {
        // A run after an answer: the words before the calls went out with the run that asked.
        const words = input.resume ? "" : textOf(dangling.event.parts);
        return { ...end(words), waiting: ran.waiting };
      }
    } else if (input.resume) {
      // Another run answered what waited: nothing is left to go on from.
      return { ...end(""), idle: true };
    }
    if (!resumed && !input.resume) {
      context = withAppended(
        context,
        await append([{ event: userEvent(input), updateId: input.updateId }]),
      );
    }
    if (input.answer !== undefined) {
      const text = input.answer;
      await append([
        { event: { v: 1, event_type: "session", role: "model", parts: [{ kind: "text", text }] } },
      ]);
      return end(text);
    }

    /**
     * Gemini refused what this turn sent, for good: kept, and from then on sent as stand-ins
     * (refusals.ts), so that the conversation's next message is answered. The first request of
     * a turn ends on the user's message; a later one holds what the turn added after it.
     */
    const recordRefusal = async (reason: string) => {
      const last = context.events.at(-1);
      const request = last && isRealUserMessage(last.event) ? "first" : "later";
      log.warn({ request, reason }, "Gemini refused the turn's input; it will be left out");
      await append([{ event: refusalEvent(reason, request) }]);
    };

    // The chat is ours until the turn ends (the inbox runs one update per chat at a time), so the
    // context is kept here as it grows instead of being asked of the store before each request.
    let roundsWithoutTools = 0;
    let compactor = deps.compactor;
    // Gemini said the request was past the model's context: it is compacted once, however it
    // measured, and what that did decides whether the message itself was too long.
    let compactForLength = false;
    let forced: CompactionOutcome["status"] | undefined;
    // Set inside ask(), read after it: a local TypeScript would take for what it last saw here.
    const compactionAsked = () => compactForLength;
    for (;;) {
      await input.guard?.();
      if (input.stop?.aborted) return endStopped("");
      if (compactor) {
        const force = compactionAsked();
        compactForLength = false;
        const outcome = await compactor.maybeCompact(
          chatId,
          context,
          input.guard,
          input.stop,
          force,
        );
        if (force) forced = outcome.status;
        context = outcome.context;
        if (outcome.status === "stopped") return endStopped("");
        // Once per turn: the summary call's own retries would otherwise delay every round after.
        if (outcome.status === "failed") compactor = undefined;
      }
      const used = toolCallsSinceUserMessage(context.events);
      const remaining = settings.maxToolCallsPerTurn - used;
      const offerTools = remaining > 0;
      // An upload the stop leaves running (the SDK cannot abort one) is kept for the next turn.
      const prepared = await unlessStopped(deps.media.forRequest(context), input.stop);
      if (prepared === undefined) return endStopped("");
      let media = prepared;
      const options = { sentAt, ...(offerTools ? {} : { note: toolBudgetInstruction(used) }) };
      // Every request of a conversation starts with the bytes of the one before it (Gemini's
      // implicit cache bills them at a fraction): the same instruction and tools every time,
      // even once the budget is spent, when the model is only forbidden to call them.
      const request = {
        model: settings.model,
        systemInstruction: instruction + ((await deps.scopeInstruction?.(scope)) ?? ""),
        contents: contentsFor(context, media.toGemini, options),
        tools: tools.declarations(),
        ...(offerTools ? {} : { functionCalling: "none" as const }),
        ...(settings.builtinTools ? { builtinTools: settings.builtinTools } : {}),
        ...(settings.thinkingLevel ? { thinkingLevel: settings.thinkingLevel } : {}),
        stream,
        ...(input.stop ? { stop: input.stop } : {}),
      };
      const ask = async (): Promise<GenerateResult> => {
        const answer = await retryingLostFiles(deps.media, context, media, (current) => {
          if (current !== media) {
            media = current;
            request.contents = contentsFor(context, current.toGemini, options);
          }
          return model.generate(request);
        }).catch(async (error: unknown) => {
          // Too long: the history is compacted first. Compacted and still too long, or with
          // nothing before it to compact, the message alone is too long for the model, and set
          // aside like any input Gemini refused; if compacting failed, nobody knows, and it stays.
          if (exceedsContext(error)) {
            if (compactor && forced === undefined) {
              compactForLength = true;
              throw error;
            }
            if (forced !== "compacted" && forced !== "nothing-to-compact") throw error;
          }
          if (error instanceof GeminiRefusedError && error.inputRefused) {
            await recordRefusal(error.reason);
          }
          throw error;
        });
        modelCalls++;
        addUsage(usage, answer.usage);
        hooks.emit("modelCall", { chatId, model: request.model, usage: answer.usage });
        return answer;
      };
      /** ask(), or undefined when the conversation is to be compacted and asked again. */
      const askUnlessTooLong = async (): Promise<GenerateResult | undefined> => {
        try {
          return await ask();
        } catch (error) {
          if (!compactionAsked()) throw error;
          log.warn("Gemini found the request too long for the model; compacting and asking again");
          return undefined;
        }
      };
      let result = await askUnlessTooLong();
      if (result === undefined) continue;
      if (result.stopped) return endStopped(textOf(fromContent(result.content).parts));
      let verdict = judgeAnswer(result);
      // Gemini's word for a call it may not make: the budget is spent, and tools forbidden.
      if (
        !offerTools &&
        verdict.kind === "malformed" &&
        verdict.detail === "UNEXPECTED_TOOL_CALL"
      ) {
        return endOverBudget(used);
      }
      if (verdict.kind === "malformed") {
        log.warn({ detail: verdict.detail }, "Gemini sent a malformed function call; asking again");
        await input.guard?.();
        progress?.restart();
        result = await askUnlessTooLong();
        if (result === undefined) continue;
        if (result.stopped) return endStopped(textOf(fromContent(result.content).parts));
        verdict = judgeAnswer(result);
      }
      if (verdict.kind === "malformed") {
        log.warn({ detail: verdict.detail }, "Gemini sent a malformed function call twice");
        return end(MALFORMED_TWICE);
      }
      if (verdict.kind === "failed") {
        log.warn({ reason: verdict.reason }, "Gemini gave no usable answer");
        return end(verdict.message);
      }

      const event = await modelEvent(chatId, result, input.guard);
      // No prompt has 0 tokens: 0 means Gemini sent no count, and the store must not take it
      // for a measurement of the context (it would hide the context from the token budget).
      const storedAnswer = await append([
        { event, promptTokens: result.usage.promptTokens || undefined },
      ]).catch((error: unknown) => {
        if (error instanceof EventTooLargeError) {
          throw new GeminiAnswerTooLargeError("Gemini's answer as an event", MAX_EVENT_BYTES);
        }
        throw error;
      });
      context = withAppended(context, storedAnswer);
      hooks.emit("modelResponse", { chatId, event, usage: { ...usage } });
      files.push(...answerFilesOf(event));
      for (const part of event.parts) {
        if (part.kind === "server_tool_call" || part.kind === "executable_code") serverToolCalls++;
        if (part.kind === "grounding") grounding.push(part);
      }

      const calls = functionCallsOf(event);
      if (calls.length === 0) {
        const words = textOf(event.parts) || codeOutputsOf(event.parts);
        const pieces = [words, verdict.cutNote, sourcesBlock(sourcesOf(grounding))];
        return end(pieces.filter((piece) => piece).join("\n\n"));
      }

      const ran = await runCalls(context.events.at(-1) as StoredSession, remaining);
      if (ran === "stopped") return endStopped("");
      if (ran !== "ran") return { ...end(textOf(event.parts)), waiting: ran.waiting };
      if (!offerTools && ++roundsWithoutTools > EXTRA_ROUNDS_AFTER_BUDGET)
        return endOverBudget(used);
    }
  }

  return { runTurn };
}
