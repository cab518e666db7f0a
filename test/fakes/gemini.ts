/**
 * A strict fake of the Gemini REST API (`POST /v1/models/{model}:generateContent`, and
 * `:streamGenerateContent?alt=sse` as server-sent events), for tests that drive the real
 * @google/genai SDK with `httpOptions.baseUrl = fake.baseUrl`.
 *
 * Answers come from scripted steps (see gemini-steps.ts): per-model queues first, then the
 * shared queue, then the default responder (text "ok"). Every request is validated first, like
 * the real API, and refused with a 400 in the real error shape; refusals do not consume a step
 * and are recorded in `rejections`, so a test can assert the code under test sent only valid
 * requests with `expect(fake.rejections).toEqual([])`.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import type { Part } from "@google/genai";
import { createImplicitCache, promptText, tokensOfText } from "./gemini-cache.js";
import { answerEmbedding, EMBED_PATH } from "./gemini-embeddings.js";
import { FakeFiles, type FileProblem, type FilesOptions } from "./gemini-files.js";
import {
  imageStep,
  isImageModel,
  isSpeechModel,
  outputProblem,
  speechStep,
  voiceList,
} from "./gemini-media-models.js";
import {
  type ErrorStep,
  type GenerateBody,
  type RecordedRequest,
  type ReplyStep,
  type StaticStep,
  type Step,
  text,
} from "./gemini-steps.js";
import { DEFAULT_STREAM_SHAPE, type StreamShape, streamChunks } from "./gemini-stream.js";
import { type PartMatch, Unprocessable } from "./gemini-unprocessable.js";
import { callKey, type IssuedCall, serverPartKey, validateRequest } from "./gemini-validation.js";

export { type FakeFile, FakeFiles, FILE_LIFETIME_MS } from "./gemini-files.js";
export * from "./gemini-media-models.js";
export * from "./gemini-steps.js";
export * from "./gemini-unprocessable.js";
export { type IssuedCall, SKIP_SIGNATURE } from "./gemini-validation.js";

export type EmbeddingCall = { model: string; method: string; body: unknown };

export interface Rejection {
  status: number;
  /** Gemini's status name when it is not the usual one for `status` (FAILED_PRECONDITION). */
  statusName?: string;
  message: string;
  /** google.rpc details Gemini sends with it (an ErrorInfo for a bad API key). */
  details?: unknown[];
  request?: RecordedRequest;
}

export interface FakeGemini {
  readonly baseUrl: string;
  /** Every embedContent or batchEmbedContents request answered. */
  readonly embeddings: EmbeddingCall[];
  /**
   * The next `times` embedContent or batchEmbedContents requests get no answer at all, as from a
   * Gemini that hangs; each is dropped once its client gives up. `arrived` resolves once all of
   * them came, `hungUp` once their clients all gave up.
   */
  stallEmbeddings(times?: number): { arrived: Promise<void>; hungUp: Promise<void> };
  /** Every generateContent request whose body parsed as JSON, refused ones included. */
  readonly requests: RecordedRequest[];
  /** Requests the fake's validation refused (not scripted errors). */
  readonly rejections: Rejection[];
  readonly lastError: Rejection | undefined;
  /** Function calls the fake answered with, and the signature each one carried. */
  readonly issued: IssuedCall[];
  script(...steps: Step[]): void;
  /** Steps only requests for this model (id without `models/`) consume, before the shared queue. */
  scriptFor(model: string, ...steps: Step[]): void;
  /** Answer used when no scripted step is left. */
  setDefault(step: Step): void;
  /** Scripted steps not consumed yet, over all queues. */
  pendingSteps(): number;
  /**
   * For the next `ms`, answers every generateContent call (after validating it) with the 429 a
   * spent per-minute quota gets: RESOURCE_EXHAUSTED with QuotaFailure, Help and a RetryInfo
   * naming the time left in whole seconds, rounded up, unless `retryDelay` names another.
   */
  limitFor(ms: number, options?: { retryDelay?: string }): void;
  /** Calls answered 429 by limitFor, in order. */
  readonly limited: RecordedRequest[];
  /** How many times the voice list (`GET /v1/voices`) was read. */
  readonly voiceListReads: number;
  /**
   * From now on, refuses every request that holds a part `match` picks (gemini-unprocessable.ts:
   * `withBytes`, `withText`), inline or uploaded, with Gemini's 400 INVALID_ARGUMENT: `message`,
   * or Gemini's words for the part's type ("Unable to process input image…"). Such requests
   * are recorded in `unprocessed`, not in `rejections`, and consume no step.
   */
  cannotProcess(match: PartMatch, message?: string): void;
  /** Requests refused by cannotProcess, in order. */
  readonly unprocessed: RecordedRequest[];
  /** The Files API: what was uploaded, and ways to expire files or fail their processing. */
  readonly files: FakeFiles;
  close(): Promise<void>;
}

export interface FakeGeminiOptions {
  /** When set, any other key is refused the way Gemini refuses a bad key. */
  apiKey?: string;
  /** How streamed answers are cut and paced, unless a step says otherwise. */
  stream?: Partial<StreamShape>;
  /** How long uploaded files live and how long videos are processed. */
  files?: FilesOptions;
  /** Seconds of speech the TTS models make of each character (SECONDS_PER_CHAR unless set). */
  speechSecondsPerChar?: number;
  /**
   * Reports the prefix a request shares with recent ones as cached, as Gemini's implicit caching
   * does (gemini-cache.ts). On unless turned off; a step's usage override wins.
   */
  implicitCaching?: boolean;
}

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  408: "DEADLINE_EXCEEDED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

// SDK 3.x defaults to v1; v1beta/v1alpha are what `apiVersion` overrides select.
const GENERATE_PATH =
  /^\/(v1|v1beta|v1alpha)\/models\/([^/]+):(generateContent|streamGenerateContent)$/;
const VOICES_PATH = /^\/(v1|v1beta|v1alpha)\/voices$/;

const estimateTokens = (value: unknown): number => Math.ceil(JSON.stringify(value).length / 4);

// Opaque and unique like Gemini's: a random stem per process, then a counter (48 random bytes per
// answer cost the benchmarks' fake a twentieth of its time).
const SIGNATURE_STEM = randomBytes(36).toString("base64");
let signatures = 0;
const randomSignature = (): string =>
  `${SIGNATURE_STEM}${Buffer.from((++signatures).toString(36).padStart(12, "0")).toString("base64")}`;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8" });
  res.end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  step: Omit<ErrorStep, "kind"> & { statusName?: string | undefined; details?: unknown[] },
): void {
  const details = step.retryDelay
    ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: step.retryDelay }]
    : step.details;
  const status = step.statusName ?? STATUS_NAMES[step.status] ?? "UNKNOWN";
  sendJson(res, step.status, {
    error: { code: step.status, message: step.message, status, ...(details ? { details } : {}) },
  });
}

const QUOTA_MESSAGE =
  "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.";

/** The body Gemini sends for a spent quota: the RetryInfo comes last, after two other details. */
function sendQuotaError(res: ServerResponse, model: string, retryDelay: string): void {
  sendJson(res, 429, {
    error: {
      code: 429,
      message: QUOTA_MESSAGE,
      status: "RESOURCE_EXHAUSTED",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [
            {
              quotaMetric: "generativelanguage.googleapis.com/generate_content_paid_tier_requests",
              quotaId: "GenerateRequestsPerMinutePerProjectPerModel",
              quotaDimensions: { location: "global", model },
              quotaValue: "1000",
            },
          ],
        },
        {
          "@type": "type.googleapis.com/google.rpc.Help",
          links: [
            {
              description: "Learn more about Gemini API quotas",
              url: "https://ai.google.dev/gemini-api/docs/rate-limits",
            },
          ],
        },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay },
      ],
    },
  });
}

function readJson(req: IncomingMessage): Promise<{ json: unknown } | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("error", reject);
    req.once("end", () => {
      try {
        resolve({ json: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      } catch {
        resolve(undefined);
      }
    });
  });
}

function keyProblem(
  given: string | undefined,
  expected: string | undefined,
): { status: number; message: string; details?: unknown[] } | undefined {
  if (given === undefined || given === "") {
    return {
      status: 403,
      message:
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    };
  }
  if (expected !== undefined && given !== expected) {
    const message = "API key not valid. Please pass a valid API key.";
    const details = [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "API_KEY_INVALID",
        domain: "googleapis.com",
        metadata: { service: "generativelanguage.googleapis.com" },
      },
      { "@type": "type.googleapis.com/google.rpc.LocalizedMessage", locale: "en-US", message },
    ];
    return { status: 400, message, details };
  }
  return undefined;
}

export async function startFakeGemini(options: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const requests: RecordedRequest[] = [];
  const embeddings: EmbeddingCall[] = [];
  const rejections: Rejection[] = [];
  const issued: IssuedCall[] = [];
  const bySignature = new Map<string, IssuedCall>();
  const callKeys = new Set<string>();
  const serverParts = new Map<string, string>();
  const signedServerParts = new Set<string>();
  const shared: Step[] = [];
  const perModel = new Map<string, Step[]>();
  let fallback: Step = text("ok");
  const limited: RecordedRequest[] = [];
  let limitedUntil = 0;
  let limitedHint: string | undefined;
  let baseUrl = "";
  let voiceListReads = 0;
  const embeddingStalls: Array<{ arrive(): void; hangUp(): void }> = [];
  const files = new FakeFiles(() => baseUrl, options.files);
  const implicitCache = createImplicitCache();
  const unprocessable = new Unprocessable((uri) => files.bytesOf(uri));
  const unprocessed: RecordedRequest[] = [];

  // Speech and image models answer by themselves unless a step is scripted for them: the shared
  // queue is the conversation model's.
  const nextStep = (model: string): Step =>
    perModel.get(model)?.shift() ??
    (isSpeechModel(model)
      ? (request: RecordedRequest) => speechStep(request, options.speechSecondsPerChar)
      : isImageModel(model)
        ? imageStep
        : undefined) ??
    shared.shift() ??
    fallback;

  const signPart = (part: Part, model: string): Part => {
    if (part.toolCall !== undefined) {
      const signature = part.thoughtSignature ?? randomSignature();
      const key = serverPartKey(part as Record<string, unknown>);
      serverParts.set(signature, key);
      signedServerParts.add(key);
      return { ...part, thoughtSignature: signature };
    }
    const call = part.functionCall;
    if (call === undefined) return part;
    const signature = part.thoughtSignature ?? randomSignature();
    const record: IssuedCall = { signature, model, name: call.name ?? "", args: call.args ?? {} };
    if (call.id !== undefined) record.id = call.id;
    issued.push(record);
    bySignature.set(signature, record);
    callKeys.add(callKey(record));
    return { ...part, thoughtSignature: signature };
  };

  /** The prompt's tokens and what the implicit cache held of them; the prompt is then cached. */
  const promptUsage = (request: RecordedRequest) => {
    const prompt = promptText(request.body);
    const cached =
      options.implicitCaching === false
        ? 0
        : implicitCache.cachedTokens(request.apiKey, request.model, prompt);
    if (options.implicitCaching !== false)
      implicitCache.remember(request.apiKey, request.model, prompt);
    return { promptTokenCount: tokensOfText(prompt), cachedContentTokenCount: cached };
  };

  const buildReply = (step: ReplyStep, request: RecordedRequest) => {
    const parts = step.parts.map((part) => signPart(part, request.model));
    const measured = promptUsage(request);
    const promptTokenCount = step.usage?.promptTokenCount ?? measured.promptTokenCount;
    const blocked = step.promptBlockReason !== undefined;
    const candidatesTokenCount =
      step.usage?.candidatesTokenCount ?? (blocked ? 0 : estimateTokens(parts));
    const thoughtsTokenCount = step.usage?.thoughtsTokenCount;
    const toolUsePromptTokenCount = step.usage?.toolUsePromptTokenCount;
    const cachedContentTokenCount =
      step.usage?.cachedContentTokenCount ??
      Math.min(measured.cachedContentTokenCount, promptTokenCount);
    if (cachedContentTokenCount > promptTokenCount) {
      throw new Error("fake Gemini: cachedContentTokenCount cannot exceed promptTokenCount");
    }
    const usageMetadata = {
      promptTokenCount,
      ...(cachedContentTokenCount ? { cachedContentTokenCount } : {}),
      candidatesTokenCount,
      ...(thoughtsTokenCount === undefined ? {} : { thoughtsTokenCount }),
      ...(toolUsePromptTokenCount === undefined ? {} : { toolUsePromptTokenCount }),
      totalTokenCount:
        step.usage?.totalTokenCount ??
        promptTokenCount +
          candidatesTokenCount +
          (thoughtsTokenCount ?? 0) +
          (toolUsePromptTokenCount ?? 0),
    };
    const meta = { usageMetadata, modelVersion: request.model, responseId: randomSignature() };
    if (blocked) return { promptFeedback: { blockReason: step.promptBlockReason }, ...meta };
    const candidate = {
      ...(parts.length > 0 ? { content: { role: "model", parts } } : {}),
      ...(step.grounding ? { groundingMetadata: step.grounding } : {}),
      ...(step.urlContext ? { urlContextMetadata: step.urlContext } : {}),
      finishReason: step.finishReason ?? "STOP",
      index: 0,
    };
    const others = (step.otherCandidates ?? []).map((more, i) => ({
      content: { role: "model", parts: more.map((part) => signPart(part, request.model)) },
      finishReason: "STOP",
      index: i + 1,
    }));
    return { candidates: [candidate, ...others], ...meta };
  };

  const streamShape = { ...DEFAULT_STREAM_SHAPE, ...options.stream };

  /** Server-sent events, one chunk each, as Gemini streams them. */
  const sendStream = async (res: ServerResponse, step: ReplyStep, request: RecordedRequest) => {
    const shape = { ...streamShape, ...step.stream };
    const chunks = streamChunks(buildReply(step, request), shape);
    const { endAfter } = step.stream ?? {};
    // A cut that would leave the whole answer is a test that tests nothing.
    if (endAfter !== undefined && (endAfter < 1 || endAfter >= chunks.length)) {
      throw new Error(
        `fake Gemini: endAfter ${endAfter} must leave out the finishing chunk of ${chunks.length}`,
      );
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const [index, chunk] of chunks.entries()) {
      if (res.destroyed) return;
      if (index === step.stream?.breakAfter) {
        res.destroy();
        return;
      }
      if (index === step.stream?.endAfter) break;
      if (index === step.stream?.garbageAfter) {
        res.end(`data: {garbage\r\n\r\n`);
        return;
      }
      const failure = step.stream?.errorAfter;
      if (index === failure?.chunks) {
        const { chunks: _, ...error } = failure;
        res.end(`data: ${JSON.stringify({ error })}\r\n\r\n`);
        return;
      }
      if (index > 0 && shape.chunkDelayMs > 0) await delay(shape.chunkDelayMs);
      // Each chunk reaches the socket before the next (or a break) comes, as on a real network.
      await new Promise<void>((resolve) =>
        res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`, () => resolve()),
      );
    }
    request.streamEndedAt = Date.now();
    res.end();
  };

  const answer = async (res: ServerResponse, step: StaticStep, request: RecordedRequest) => {
    if (step.kind === "hang") return;
    if (step.delayMs !== undefined) await delay(step.delayMs);
    if (step.kind === "error") sendError(res, step);
    else if (request.stream) await sendStream(res, step, request);
    else sendJson(res, 200, buildReply(step, request));
  };

  const refuse = (res: ServerResponse, rejection: Rejection): void => {
    rejections.push(rejection);
    if (rejection.request) rejection.request.rejection = rejection.message;
    sendError(res, rejection);
  };

  const refuseFile = (res: ServerResponse, problem: FileProblem, request?: RecordedRequest) =>
    refuse(res, {
      status: problem.status,
      message: problem.message,
      ...(problem.statusName ? { statusName: problem.statusName } : {}),
      ...(request ? { request } : {}),
    });

  /** The first fileData part of the request that names no file Gemini holds ready. */
  const fileProblem = (body: GenerateBody): FileProblem | undefined => {
    for (const content of body.contents) {
      for (const part of content.parts ?? []) {
        const data = part.fileData;
        if (data === undefined) continue;
        const problem = files.checkReference(data.fileUri ?? "", data.mimeType ?? "");
        if (problem) return problem;
      }
    }
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://fake");
    const path = url.pathname;
    if (files.serves(req, url)) {
      const apiKey = req.headers["x-goog-api-key"];
      const denied = keyProblem(typeof apiKey === "string" ? apiKey : undefined, options.apiKey);
      return files.handle(req, res, url, denied, (problem) => refuseFile(res, problem));
    }
    const embedding = req.method === "POST" ? EMBED_PATH.exec(path) : null;
    if (embedding?.[2] && embedding[3]) {
      const parsed = await readJson(req);
      const apiKey = req.headers["x-goog-api-key"];
      const denied = keyProblem(typeof apiKey === "string" ? apiKey : undefined, options.apiKey);
      if (denied) return refuse(res, denied);
      const stalled = embeddingStalls.shift();
      if (stalled) {
        stalled.arrive();
        res.once("close", stalled.hangUp);
        return;
      }
      const model = decodeURIComponent(embedding[2]);
      const answer = answerEmbedding(
        embedding[3] as "embedContent" | "batchEmbedContents",
        model,
        parsed?.json,
      );
      if ("problem" in answer) return refuse(res, { status: 400, message: answer.problem });
      embeddings.push({ model, method: embedding[3], body: parsed?.json });
      return sendJson(res, 200, answer.body);
    }
    if (req.method === "GET" && VOICES_PATH.test(path)) {
      const apiKey = req.headers["x-goog-api-key"];
      const denied = keyProblem(typeof apiKey === "string" ? apiKey : undefined, options.apiKey);
      if (denied) return refuse(res, denied);
      voiceListReads++;
      return sendJson(res, 200, voiceList());
    }
    const match = req.method === "POST" ? GENERATE_PATH.exec(path) : null;
    if (!match?.[1] || !match[2]) {
      const message = `The fake Gemini serves only POST /{v1,v1beta,v1alpha}/models/{model}:generateContent, :streamGenerateContent, :embedContent or :batchEmbedContents, GET /{v1,v1beta,v1alpha}/voices and the Files API (upload, get), not ${req.method} ${path}.`;
      return refuse(res, { status: 404, message });
    }
    const stream = match[3] === "streamGenerateContent";
    // Without alt=sse Gemini streams one JSON array, which the SDK never asks for.
    if (stream && url.searchParams.get("alt") !== "sse") {
      const message = "The fake Gemini streams only as server-sent events (?alt=sse).";
      return refuse(res, { status: 400, message });
    }
    const parsed = await readJson(req);
    if (parsed === undefined)
      return refuse(res, { status: 400, message: "Invalid JSON payload received." });
    const apiKey = req.headers["x-goog-api-key"];
    const request: RecordedRequest = {
      apiVersion: match[1],
      model: decodeURIComponent(match[2]),
      // Recorded as sent; validateRequest decides whether it is well formed.
      body: (typeof parsed.json === "object" && parsed.json !== null
        ? parsed.json
        : { contents: [] }) as GenerateBody,
      apiKey: typeof apiKey === "string" ? apiKey : undefined,
      at: Date.now(),
      stream,
    };
    requests.push(request);
    const problem =
      keyProblem(request.apiKey, options.apiKey) ??
      validateRequest(
        parsed.json,
        { bySignature, callKeys, serverParts, signedServerParts },
        request.model,
      );
    if (typeof problem === "string") return refuse(res, { status: 400, message: problem, request });
    if (problem !== undefined) return refuse(res, { ...problem, request });
    const output = outputProblem(request.model, request.body);
    if (output !== undefined) return refuse(res, { status: 400, message: output, request });
    const missing = fileProblem(request.body);
    if (missing) return refuseFile(res, missing, request);
    const cannot = unprocessable.check(request.body);
    if (cannot !== undefined) {
      unprocessed.push(request);
      return sendError(res, { status: 400, message: cannot });
    }
    if (Date.now() < limitedUntil) {
      limited.push(request);
      const left = `${Math.ceil((limitedUntil - Date.now()) / 1000)}s`;
      return sendQuotaError(res, request.model, limitedHint ?? left);
    }
    const step = nextStep(request.model);
    await answer(res, typeof step === "function" ? await step(request) : step, request);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      sendError(res, { status: 500, message: `The fake Gemini failed: ${String(error)}` });
    });
  });
  // Node closes a kept-alive connection idle for 5 s; a client that takes longer than that to
  // build its next request (a 100 MB one, on a busy host) may send it into that close and read
  // ECONNRESET. Google's front ends keep connections far longer.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  baseUrl = `http://127.0.0.1:${port}`;

  return {
    baseUrl,
    files,
    requests,
    embeddings,
    rejections,
    get lastError() {
      return rejections.at(-1);
    },
    issued,
    script: (...steps) => {
      shared.push(...steps);
    },
    scriptFor: (model, ...steps) => {
      perModel.set(model, [...(perModel.get(model) ?? []), ...steps]);
    },
    setDefault: (step) => {
      fallback = step;
    },
    limited,
    unprocessed,
    get voiceListReads() {
      return voiceListReads;
    },
    cannotProcess: (match, message) => unprocessable.add(match, message),
    stallEmbeddings: (times = 1) => {
      const arrived: Promise<void>[] = [];
      const hungUp: Promise<void>[] = [];
      for (let i = 0; i < times; i++) {
        let arrive = () => {};
        arrived.push(
          new Promise<void>((resolve) => {
            arrive = resolve;
          }),
        );
        hungUp.push(new Promise<void>((hangUp) => embeddingStalls.push({ arrive, hangUp })));
      }
      const all = (list: Promise<void>[]) => Promise.all(list).then(() => {});
      return { arrived: all(arrived), hungUp: all(hungUp) };
    },
    limitFor: (ms, options = {}) => {
      limitedUntil = Date.now() + ms;
      limitedHint = options.retryDelay;
    },
    pendingSteps: () =>
      [...perModel.values()].reduce((sum, queue) => sum + queue.length, shared.length),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
