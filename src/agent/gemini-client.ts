import {
  type Content,
  type GenerateContentConfig,
  type GenerateContentParameters,
  type GenerateContentResponse,
  type GenerateContentResponseUsageMetadata,
  type GoogleGenAI,
  type GroundingMetadata,
  Modality,
  type Part,
  type UrlContextMetadata,
} from "@google/genai";
import type { Logger } from "pino";
import {
  type BackoffPolicy,
  nextRetryDelay,
  type Random,
  type RetryBudget,
} from "../retry/backoff.js";
import { createSharedLimit, type SharedLimit } from "../retry/shared-limit.js";
import { unlessStopped } from "../retry/unless-stopped.js";
import { toolsConfig } from "./builtin-tools.js";
import {
  describeFailure,
  type Failure,
  GeminiAnswerTooLargeError,
  GeminiRefusedError,
  GeminiUnavailableError,
} from "./gemini-errors.js";
import { GEMINI_API_URL, lazyGenAi, requestSignal } from "./genai-sdk.js";
import type { GenerateRequest, GenerateResult, ModelClient } from "./model-client.js";
import { capResponseBytes, MAX_MODEL_RESPONSE_BYTES, tooLargeIn } from "./response-cap.js";
import { StreamAssembly } from "./stream-assembly.js";
import { streamLargeBodies } from "./streamed-request-body.js";
import { thinkingConfigFor } from "./thinking.js";
import { sseInWholeEvents } from "./whole-sse-events.js";

/** Documented value that makes Gemini skip signature validation for a function call. */
export const SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator";

const DEFAULT_RETRY: RetryBudget = {
  maxAttempts: 5,
  baseMs: 500,
  maxMs: 8_000,
  maxTotalMs: 45_000,
};
const DEFAULT_TIMEOUT_MS = 60_000;
/**
 * How long every call waits after a 429: what RetryInfo says, or without it a backoff by
 * closings in a row; at most 5 minutes either way (a spent daily quota says hours), after which
 * one call finds out whether the quota is back.
 */
export const RATE_LIMIT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 5 * 60 * 1000 };

export interface GeminiClientDeps {
  apiKey: string;
  baseUrl?: string;
  logger: Logger;
  /** Per attempt. */
  timeoutMs?: number;
  retry?: Partial<RetryBudget>;
  sleep?: (ms: number) => Promise<void>;
  /** Cap on one response's bytes (MAX_MODEL_RESPONSE_BYTES); tests lower it. */
  maxResponseBytes?: number;
  /** Jitter source in [0, 1); injectable so tests can pin the backoff. */
  random?: Random;
  /**
   * The process's one limit on this API key's calls, which a 429 closes for every caller; a
   * client of its own when not given (tests, the terminal chat).
   */
  limit?: SharedLimit;
}

const defaultSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Copy of `contents` whose function calls all carry the placeholder signature. Which signatures
 * Gemini objected to cannot be told from here, so every call gets it; the caller's array is
 * left as it was.
 */
export function withPlaceholderSignatures(contents: Content[]): Content[] {
  return contents.map((content) =>
    content.parts === undefined
      ? content
      : {
          ...content,
          parts: content.parts.map((part) =>
            part.functionCall === undefined
              ? part
              : { ...part, thoughtSignature: SKIP_THOUGHT_SIGNATURE },
          ),
        },
  );
}

function paramsFor(
  request: GenerateRequest,
  contents: Content[],
  abortSignal: AbortSignal,
): GenerateContentParameters {
  const config: GenerateContentConfig = { abortSignal };
  if (request.systemInstruction) config.systemInstruction = request.systemInstruction;
  Object.assign(
    config,
    toolsConfig(request.model, request.tools, request.builtinTools, request.functionCalling),
  );
  const thinking = thinkingConfigFor(request.model, request.thinkingLevel);
  if (thinking) config.thinkingConfig = thinking;
  if (request.output?.kind === "speech") {
    config.responseModalities = [Modality.AUDIO];
    config.speechConfig = {
      voiceConfig: { prebuiltVoiceConfig: { voiceName: request.output.voice } },
    };
  } else if (request.output?.kind === "image") {
    config.responseModalities = [Modality.TEXT, Modality.IMAGE];
  }
  return { model: request.model, contents, config };
}

function usageOf(
  metadata: GenerateContentResponseUsageMetadata | undefined,
): GenerateResult["usage"] {
  return {
    promptTokens: metadata?.promptTokenCount ?? 0,
    cachedTokens: metadata?.cachedContentTokenCount ?? 0,
    outputTokens: (metadata?.candidatesTokenCount ?? 0) + (metadata?.thoughtsTokenCount ?? 0),
    thoughtsTokens: metadata?.thoughtsTokenCount ?? 0,
    toolUseTokens: metadata?.toolUsePromptTokenCount ?? 0,
  };
}

type Answer = {
  finishReason?: string | undefined;
  blockReason?: string | undefined;
  groundingMetadata?: GroundingMetadata | undefined;
  urlContextMetadata?: UrlContextMetadata | undefined;
};

function resultOf(
  parts: Part[],
  usage: GenerateContentResponseUsageMetadata | undefined,
  {
    finishReason,
    blockReason,
    groundingMetadata: grounding,
    urlContextMetadata: urlContext,
  }: Answer,
): GenerateResult {
  return {
    content: { role: "model", parts },
    usage: usageOf(usage),
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(blockReason === undefined ? {} : { blockReason }),
    ...(grounding || urlContext
      ? {
          grounding: {
            ...(grounding ? { metadata: grounding } : {}),
            ...(urlContext ? { urlContext } : {}),
          },
        }
      : {}),
  };
}

function toResult(response: GenerateContentResponse): GenerateResult {
  // Koroku asks for one candidate; should several come, the first is the answer.
  const candidate = response.candidates?.[0];
  return resultOf(candidate?.content?.parts ?? [], response.usageMetadata, {
    finishReason: candidate?.finishReason,
    blockReason: response.promptFeedback?.blockReason,
    groundingMetadata: candidate?.groundingMetadata,
    urlContextMetadata: candidate?.urlContextMetadata,
  });
}

/** A stream that failed after its first chunk: the next attempt starts the answer over. */
class MidStreamFailure extends Error {
  constructor(readonly failure: unknown) {
    super("the stream broke off");
  }
}

/**
 * One generateContent call per generate(), streamed when the request asks, with our retry
 * policy. Throws GeminiRefusedError or GeminiUnavailableError. An answer without content (safety stop, blocked
 * prompt, empty candidate) is not an error: it comes back without parts, with its reason.
 */
export function createGeminiClient(deps: GeminiClientDeps): ModelClient {
  const budget: RetryBudget = { ...DEFAULT_RETRY, ...deps.retry };
  const sleep = deps.sleep ?? defaultSleep;
  const random = deps.random ?? Math.random;
  const loadSdk = lazyGenAi({
    apiKey: deps.apiKey,
    baseUrl: deps.baseUrl,
    // Node's own fetch (the SDK's default): it streams bodies, which SSE needs. Capped, so that no
    // answer can fill the memory before it is refused; in whole events, so that a large one is
    // parsed in linear time; a request with inline media sent in chunks, not copied whole. Neither
    // @google/genai 3 nor Node 24 does any of the three itself (docs/decisions/0009-gemini-fetch-wrappers.md).
    fetch: capResponseBytes(
      streamLargeBodies(fetch),
      deps.maxResponseBytes ?? MAX_MODEL_RESPONSE_BYTES,
      sseInWholeEvents,
    ),
  });

  /** Delay before the next attempt, or throws the error that ends generate(). */
  function planRetry(failure: Failure, attempt: number, spentMs: number): number {
    if (!failure.retryable) {
      throw new GeminiRefusedError(failure.reason, failure.status, failure.inputRefused);
    }
    const delayMs = nextRetryDelay(attempt, spentMs, budget, random, failure.retryAfterMs);
    if (delayMs === undefined) {
      throw new GeminiUnavailableError(failure.reason, attempt, failure.status, failure.cause);
    }
    return delayMs;
  }

  /**
   * One request, aborted after timeoutMs. The deadline is ours rather than httpOptions.timeout:
   * after a success the SDK leaves that timer, and the AbortController it holds, armed for the
   * whole timeout in case the body is still streaming. Under load that was a minute's worth of
   * requests held in memory, ~1 KB each. A stream's deadline is for each chunk: a long answer
   * that keeps coming is not cut off, one that stalls is.
   */
  async function send(
    ai: GoogleGenAI,
    request: GenerateRequest,
    contents: Content[],
    /** A chunk came (the first: Gemini took the request). */
    received: () => void,
  ): Promise<GenerateResult> {
    const deadline = requestSignal(deps.timeoutMs ?? DEFAULT_TIMEOUT_MS, request.stop);
    const assembly = new StreamAssembly();
    try {
      const params = paramsFor(request, contents, deadline.signal);
      if (request.stream === undefined) return toResult(await ai.models.generateContent(params));
      for await (const chunk of await ai.models.generateContentStream(params)) {
        deadline.refresh();
        received();
        // The chunk that finishes an answer without a function call is not drafted: that text
        // is sent as the answer's message, and an answer that came whole costs no draft at all.
        if (assembly.add(chunk) && !assembly.endsWithoutCall) {
          request.stream.onText(assembly.visibleText);
        }
      }
      const result = resultOf(assembly.parts, assembly.usage, assembly);
      // Gemini ends every stream with a finish reason (or a blocked prompt); one without it was
      // cut on the way, and asking again would pay for the whole answer twice.
      const ended = assembly.finishReason !== undefined || assembly.blockReason !== undefined;
      if (!ended) {
        deps.logger.warn(
          { model: request.model, parts: assembly.parts.length },
          "Gemini's stream ended without a finish reason; the answer is kept as cut",
        );
      }
      return ended ? result : { ...result, cut: true };
    } catch (error) {
      if (request.stop?.aborted) return stoppedResult(assembly);
      throw assembly.received ? new MidStreamFailure(error) : error;
    } finally {
      deadline.dispose();
    }
  }

  /** A stop during the backoff ends it at once (the loop then returns the stopped answer). */
  async function sleepUnlessStopped(ms: number, stop: AbortSignal | undefined): Promise<void> {
    await unlessStopped(sleep(ms), stop);
  }

  /** What was written before the user stopped it: only the words they saw are kept. */
  function stoppedResult(assembly: StreamAssembly | undefined): GenerateResult {
    const parts = (assembly?.parts ?? []).filter(
      (part) => part.text !== undefined && part.text !== "" && !part.thought,
    );
    return { ...resultOf(parts, assembly?.usage, assembly ?? {}), stopped: true };
  }

  const limit =
    deps.limit ??
    createSharedLimit({ policy: RATE_LIMIT_BACKOFF, random, sleep: sleepUnlessStopped });

  async function generate(request: GenerateRequest): Promise<GenerateResult> {
    const { ai, apiError } = await loadSdk();
    let contents = request.contents;
    let repairedSignatures = false;
    /** Attempts Gemini answered 429: the shared limit, not this call's backoff, paces them. */
    let limitedAttempts = 0;
    // Planned delays count in full even when an injected sleep returns early.
    let spentMs = 0;
    for (let attempt = 1; ; attempt++) {
      if (request.stop?.aborted) return stoppedResult(undefined);
      const entered = Date.now();
      const pass = await limit.enter(entered + budget.maxTotalMs - spentMs, request.stop);
      if (pass === undefined) {
        if (request.stop?.aborted) return stoppedResult(undefined);
        throw new GeminiUnavailableError(
          `Gemini limits this API key's requests (429) for ${Math.ceil(limit.closedForMs() / 1000)} s more, past this call's retry budget`,
          attempt,
          429,
        );
      }
      const started = Date.now();
      spentMs += started - entered;
      let failure: Failure | undefined;
      // The limit's probe ends when Gemini takes the call, not when its answer ends: the calls
      // waiting behind it have their own time budgets, which a long answer would spend.
      let streamed: { first: number; last: number } | undefined;
      const chunk = () => {
        const at = Date.now();
        if (streamed) streamed.last = at;
        else {
          streamed = { first: at, last: at };
          pass.accepted();
        }
      };
      try {
        return await send(ai, request, contents, chunk);
      } catch (thrown) {
        // Time spent receiving an answer that then broke off is no wait for one: a long answer
        // cut after a minute is asked again, as a short one is. A wait for a chunk that did not
        // come counts.
        spentMs += Date.now() - started - (streamed ? streamed.last - streamed.first : 0);
        const midStream = thrown instanceof MidStreamFailure;
        const error = midStream ? thrown.failure : thrown;
        const tooLarge = tooLargeIn(error);
        if (tooLarge) {
          deps.logger.warn(
            { model: request.model, max_bytes: tooLarge.maxBytes },
            "Gemini's answer was too large; dropped",
          );
          throw new GeminiAnswerTooLargeError("Gemini's response", tooLarge.maxBytes);
        }
        failure = describeFailure(error, deps.apiKey, apiError, {
          url: deps.baseUrl ?? GEMINI_API_URL,
          timeoutMs: deps.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        });
        pass.done(
          failure.status === 429
            ? { limited: true, serverDelayMs: failure.retryAfterMs }
            : { limited: false },
        );
        const log = {
          model: request.model,
          attempt,
          status: failure.status,
          reason: failure.reason,
          ...(midStream ? { mid_stream: true } : {}),
        };
        // Asked again, the answer starts over: what was shown of this one goes.
        const restart = () => {
          if (midStream) request.stream?.onRestart();
        };
        if (failure.signatureProblem && !repairedSignatures) {
          repairedSignatures = true;
          restart();
          contents = withPlaceholderSignatures(contents);
          deps.logger.warn(
            log,
            "Gemini rejected thought signatures; retrying with the placeholder",
          );
          continue;
        }
        if (failure.status === 429) {
          // The shared limit holds every call back now, this one's next attempt included, for as
          // long as the call's time budget allows: a probe turned away is no failure of its own.
          limitedAttempts++;
          restart();
          deps.logger.warn(
            { ...log, wait_ms: limit.closedForMs() },
            "Gemini limits this API key's requests; every call waits",
          );
          continue;
        }
        const delayMs = planRetry(failure, attempt - limitedAttempts, spentMs);
        deps.logger.warn({ ...log, delayMs }, "Gemini call failed; retrying");
        restart();
        await sleepUnlessStopped(delayMs, request.stop);
        spentMs += delayMs;
      } finally {
        // Whatever else ended the attempt (an answer, one too large), Gemini did not say 429.
        if (failure === undefined) pass.done({ limited: false });
      }
    }
  }

  return { generate };
}
