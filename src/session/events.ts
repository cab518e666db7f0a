import type { Content, Part } from "@google/genai";
import { z } from "zod";
import { mediaNote } from "./media-text.js";

/**
 * The stored shape of a conversation. Gemini 3 rejects a history whose function calls lost their
 * thoughtSignature, so every part keeps it byte-for-byte, and optional fields stay absent rather
 * than defaulted: `toContent(fromContent(c))` must equal `c`.
 */
export const SCHEMA_VERSION = 1;

// Arguments and responses are checked to be objects but not rebuilt: a rebuilt object would
// drop keys such as "__proto__" that JSON can carry, and copying them costs time on every load.
export const jsonObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  { message: "expected a JSON object" },
);

export const textPartSchema = z.object({
  kind: z.literal("text"),
  text: z.string(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
});

export const functionCallPartSchema = z.object({
  kind: z.literal("function_call"),
  name: z.string(),
  args: jsonObject.optional(),
  id: z.string().optional(),
  thoughtSignature: z.string().optional(),
});

/** What a media part came as: it decides how /history shows it and how Gemini is told of it. */
export const MEDIA_KINDS = [
  "photo",
  "voice",
  "audio",
  "video",
  "video_note",
  "animation",
  "document",
  "sticker",
] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

/**
 * A file the user sent or the model produced. The bytes stay in the attachments table (by their
 * SHA-256) and are read only when a request is built, so a parsed context never holds them.
 */
export const mediaPartSchema = z.object({
  kind: z.literal("media"),
  media: z.enum(MEDIA_KINDS),
  /** Hex SHA-256 of the bytes: the attachment's key. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  mimeType: z.string().min(1),
  size: z.number().int().nonnegative(),
  name: z.string().optional(),
  /** Seconds, for voice, audio and video. */
  duration: z.number().nonnegative().optional(),
  /** What was said in a voice note or audio file, written once by the compaction model. */
  transcript: z.string().optional(),
  /** An image the model made while thinking (not its answer): kept for Gemini, never shown. */
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  /**
   * A voice note Koroku spoke of its own answer (its transcript is the words it said): kept for
   * the user and /history, never sent to Gemini, whose context has the answer's text already.
   */
  spoken: z.boolean().optional(),
});

export const functionResponsePartSchema = z.object({
  kind: z.literal("function_response"),
  name: z.string(),
  response: jsonObject.optional(),
  id: z.string().optional(),
  thoughtSignature: z.string().optional(),
  /** The call this answers, kept so /history can show `✓ name {args}` without a join. */
  call: z.object({ name: z.string(), args: jsonObject.optional() }).optional(),
  /** Files the call sent to the chat (send_file): kept with it for /history, not sent to Gemini. */
  files: z.array(mediaPartSchema).optional(),
});

// Gemini's server-side tools (google_search, url_context, code_execution) run inside one model
// call; their parts come back in the model's turn and must be sent back as they came.
export const serverToolCallPartSchema = z.object({
  kind: z.literal("server_tool_call"),
  id: z.string().optional(),
  toolType: z.string().optional(),
  args: jsonObject.optional(),
  thoughtSignature: z.string().optional(),
});

export const serverToolResponsePartSchema = z.object({
  kind: z.literal("server_tool_response"),
  id: z.string().optional(),
  toolType: z.string().optional(),
  response: jsonObject.optional(),
  thoughtSignature: z.string().optional(),
});

export const executableCodePartSchema = z.object({
  kind: z.literal("executable_code"),
  code: z.string().optional(),
  language: z.string().optional(),
  id: z.string().optional(),
  thoughtSignature: z.string().optional(),
});

export const codeExecutionResultPartSchema = z.object({
  kind: z.literal("code_execution_result"),
  outcome: z.string().optional(),
  output: z.string().optional(),
  id: z.string().optional(),
  thoughtSignature: z.string().optional(),
});

/**
 * The candidate's groundingMetadata (and urlContextMetadata), as Gemini sent them. Not a part on
 * the wire: it is kept with the answer it grounds, shown as sources, and never sent back.
 */
export const groundingPartSchema = z.object({
  kind: z.literal("grounding"),
  metadata: jsonObject.optional(),
  urlContext: jsonObject.optional(),
});

export const partSchema = z.discriminatedUnion("kind", [
  textPartSchema,
  functionCallPartSchema,
  functionResponsePartSchema,
  mediaPartSchema,
  serverToolCallPartSchema,
  serverToolResponsePartSchema,
  executableCodePartSchema,
  codeExecutionResultPartSchema,
  groundingPartSchema,
]);

export const sessionEventSchema = z.object({
  v: z.literal(SCHEMA_VERSION),
  event_type: z.literal("session"),
  role: z.enum(["user", "model"]),
  parts: z.array(partSchema),
  /** A model answer the user stopped while it was written: its parts are what they saw. */
  stopped: z.literal(true).optional(),
  /** A model answer whose stream ended before Gemini finished it: its parts are what arrived. */
  cut: z.literal(true).optional(),
  /** Set on a user-role event nobody typed: a scheduled task's run (src/tasks/). */
  origin: z.literal("scheduled_task").optional(),
  /**
   * Set on the model-role event stored where Gemini refused a turn for good (a 400 about what
   * the request held): its text says so in /history, and it is never sent to Gemini. `request`
   * says which request of the turn was refused: the first holds the user's message as the
   * suspect, a later one what the turn added after it (src/session/refusals.ts).
   */
  refused: z.object({ reason: z.string(), request: z.enum(["first", "later"]) }).optional(),
});

export const compactionEventSchema = z.object({
  v: z.literal(SCHEMA_VERSION),
  event_type: z.literal("compaction"),
  summary: z.array(textPartSchema),
  /** How many stored events the summary replaced (this compaction's share, not the rolling total). */
  summarized_events: z.number().int().nonnegative(),
});

export const eventSchema = z.discriminatedUnion("event_type", [
  sessionEventSchema,
  compactionEventSchema,
]);

export type TextPart = z.infer<typeof textPartSchema>;
export type FunctionCallPart = z.infer<typeof functionCallPartSchema>;
export type FunctionResponsePart = z.infer<typeof functionResponsePartSchema>;
export type MediaPart = z.infer<typeof mediaPartSchema>;
export type ServerToolCallPart = z.infer<typeof serverToolCallPartSchema>;
export type ServerToolResponsePart = z.infer<typeof serverToolResponsePartSchema>;
export type ExecutableCodePart = z.infer<typeof executableCodePartSchema>;
export type CodeExecutionResultPart = z.infer<typeof codeExecutionResultPartSchema>;
export type GroundingPart = z.infer<typeof groundingPartSchema>;
export type EventPart = z.infer<typeof partSchema>;
export type SessionEvent = z.infer<typeof sessionEventSchema>;
export type CompactionEvent = z.infer<typeof compactionEventSchema>;
export type StoredEventBody = z.infer<typeof eventSchema>;

export class UnsupportedPartError extends Error {
  constructor(
    readonly partIndex: number,
    readonly field: string,
  ) {
    super(
      `Part ${partIndex} holds "${field}", which Koroku cannot store yet (supported: text, inlineData, functionCall, functionResponse, toolCall, toolResponse, executableCode, codeExecutionResult)`,
    );
    this.name = "UnsupportedPartError";
  }
}

const PART_KEYS = new Set([
  "text",
  "inlineData",
  "thought",
  "thoughtSignature",
  "functionCall",
  "functionResponse",
  "toolCall",
  "toolResponse",
  "executableCode",
  "codeExecutionResult",
]);
const CALL_KEYS = new Set(["name", "args", "id"]);
const RESPONSE_KEYS = new Set(["name", "response", "id"]);
const TOOL_CALL_KEYS = new Set(["id", "toolType", "args"]);
const TOOL_RESPONSE_KEYS = new Set(["id", "toolType", "response"]);
const CODE_KEYS = new Set(["code", "language", "id"]);
const CODE_RESULT_KEYS = new Set(["outcome", "output", "id"]);

function checkKeys(index: number, value: object, allowed: Set<string>, prefix: string): void {
  for (const [key, v] of Object.entries(value)) {
    if (v !== undefined && !allowed.has(key)) throw new UnsupportedPartError(index, prefix + key);
  }
}

function withOptional<T extends object>(target: T, values: Record<string, unknown>): T {
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  }
  return target;
}

type ServerPart =
  | ServerToolCallPart
  | ServerToolResponsePart
  | ExecutableCodePart
  | CodeExecutionResultPart;

function serverPartFromGemini(part: Part, index: number): ServerPart | undefined {
  if (part.toolCall) {
    checkKeys(index, part.toolCall, TOOL_CALL_KEYS, "toolCall.");
    const { id, toolType, args } = part.toolCall;
    return withOptional({ kind: "server_tool_call" } as ServerToolCallPart, { id, toolType, args });
  }
  if (part.toolResponse) {
    checkKeys(index, part.toolResponse, TOOL_RESPONSE_KEYS, "toolResponse.");
    const { id, toolType, response } = part.toolResponse;
    return withOptional({ kind: "server_tool_response" } as ServerToolResponsePart, {
      id,
      toolType,
      response,
    });
  }
  if (part.executableCode) {
    checkKeys(index, part.executableCode, CODE_KEYS, "executableCode.");
    const { code, language, id } = part.executableCode;
    return withOptional({ kind: "executable_code" } as ExecutableCodePart, { code, language, id });
  }
  if (part.codeExecutionResult) {
    checkKeys(index, part.codeExecutionResult, CODE_RESULT_KEYS, "codeExecutionResult.");
    const { outcome, output, id } = part.codeExecutionResult;
    return withOptional({ kind: "code_execution_result" } as CodeExecutionResultPart, {
      outcome,
      output,
      id,
    });
  }
  return undefined;
}

/**
 * The attachments a model answer's files were stored as, by the index of their part: the bytes
 * of an inlineData part go to the attachments table, the event keeps a reference.
 */
export type StoredFiles = ReadonlyMap<number, MediaPart>;

function partFromGemini(part: Part, index: number, files: StoredFiles): EventPart {
  checkKeys(index, part, PART_KEYS, "");
  const common = { thoughtSignature: part.thoughtSignature };
  if (part.inlineData) {
    const stored = files.get(index);
    if (!stored) throw new UnsupportedPartError(index, "inlineData");
    return withOptional({ ...stored }, { thought: part.thought, ...common });
  }
  if (part.functionCall) {
    checkKeys(index, part.functionCall, CALL_KEYS, "functionCall.");
    const { name, args, id } = part.functionCall;
    return withOptional({ kind: "function_call", name: name ?? "" } as FunctionCallPart, {
      args,
      id,
      ...common,
    });
  }
  if (part.functionResponse) {
    checkKeys(index, part.functionResponse, RESPONSE_KEYS, "functionResponse.");
    const { name, response, id } = part.functionResponse;
    return withOptional({ kind: "function_response", name: name ?? "" } as FunctionResponsePart, {
      response,
      id,
      ...common,
    });
  }
  const server = serverPartFromGemini(part, index);
  if (server) return withOptional(server, common);
  if (part.text !== undefined) {
    return withOptional({ kind: "text", text: part.text } as TextPart, {
      thought: part.thought,
      ...common,
    });
  }
  if (part.thought !== undefined || part.thoughtSignature !== undefined) {
    // A bare signature part (Gemini can send one alone at the end of a turn) is kept as empty text.
    return withOptional({ kind: "text", text: "" } as TextPart, {
      thought: part.thought,
      ...common,
    });
  }
  throw new UnsupportedPartError(index, "(empty part)");
}

/** Converts a Gemini Content (a model's answer) into an event; `files` holds its stored media. */
export function fromContent(content: Content, files: StoredFiles = new Map()): SessionEvent {
  const role = content.role ?? "user";
  if (role !== "user" && role !== "model") {
    throw new Error(`Content role "${role}" is not supported; expected "user" or "model"`);
  }
  return {
    v: SCHEMA_VERSION,
    event_type: "session",
    role,
    parts: (content.parts ?? []).map((p, i) => partFromGemini(p, i, files)),
  };
}

/** How a media part reaches Gemini: its bytes when the request has them, else words about it. */
export type MediaToGemini = (part: MediaPart) => Part;

function partToGemini(part: Exclude<EventPart, GroundingPart>, media: MediaToGemini): Part {
  const signed = (data: Part): Part =>
    withOptional(data, { thoughtSignature: part.thoughtSignature });
  switch (part.kind) {
    case "media":
      return withOptional(media(part), {
        thought: part.thought,
        thoughtSignature: part.thoughtSignature,
      });
    case "server_tool_call":
      return signed({
        toolCall: withOptional({}, { id: part.id, toolType: part.toolType, args: part.args }),
      } as Part);
    case "server_tool_response":
      return signed({
        toolResponse: withOptional(
          {},
          { id: part.id, toolType: part.toolType, response: part.response },
        ),
      } as Part);
    case "executable_code":
      return signed({
        executableCode: withOptional({}, { code: part.code, language: part.language, id: part.id }),
      } as Part);
    case "code_execution_result":
      return signed({
        codeExecutionResult: withOptional(
          {},
          { outcome: part.outcome, output: part.output, id: part.id },
        ),
      } as Part);
    case "text":
      return withOptional({ text: part.text } as Part, {
        thought: part.thought,
        thoughtSignature: part.thoughtSignature,
      });
    case "function_call":
      return withOptional(
        {
          functionCall: withOptional({ name: part.name }, { args: part.args, id: part.id }),
        } as Part,
        { thoughtSignature: part.thoughtSignature },
      );
    case "function_response":
      return withOptional(
        {
          functionResponse: withOptional(
            { name: part.name },
            { response: part.response, id: part.id },
          ),
        } as Part,
        { thoughtSignature: part.thoughtSignature },
      );
  }
}

/** The event as Gemini gets it back; grounding metadata is Gemini's to send, not to receive. */
export function toContent(event: SessionEvent, media: MediaToGemini = mediaNote): Content {
  return {
    role: event.role,
    parts: event.parts
      .filter((p): p is Exclude<EventPart, GroundingPart> => p.kind !== "grounding")
      .filter((p) => !(p.kind === "media" && p.spoken))
      .map((part) => partToGemini(part, media)),
  };
}

/** Version 0 is the seed's format: a raw Gemini Content (`{role, parts}`) stored as is. */
function upgrade(raw: unknown): unknown {
  if (raw && typeof raw === "object" && !("v" in raw) && "parts" in raw) {
    return fromContent(raw as Content);
  }
  return raw;
}

export type ParseResult = { ok: true; event: StoredEventBody } | { ok: false; error: string };

/** Parses stored JSON of any schema version into the current shape. */
export function parseStoredEvent(json: string): ParseResult {
  let raw: unknown;
  try {
    raw = upgrade(JSON.parse(json));
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  const result = eventSchema.safeParse(raw);
  return result.success
    ? { ok: true, event: result.data }
    : { ok: false, error: z.prettifyError(result.error) };
}

export function textOf(parts: readonly EventPart[], options: { thoughts?: boolean } = {}): string {
  return parts
    .filter((p): p is TextPart => p.kind === "text" && (options.thoughts || !p.thought))
    .map((p) => p.text)
    .join("");
}

/**
 * What Gemini's own code runs printed, each as a Markdown code block: an answer with no words
 * but a run (code_execution) says this instead of nothing.
 */
export function codeOutputsOf(parts: readonly EventPart[]): string {
  return parts
    .flatMap((p) =>
      p.kind === "code_execution_result" && p.output?.trim() ? [codeBlock(p.output)] : [],
    )
    .join("\n\n");
}

/** A fence longer than any run of backticks in the output, so that none of them closes it. */
function codeBlock(output: string): string {
  const longest = Math.max(0, ...(output.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}\n${output.replace(/\n$/, "")}\n${fence}`;
}

export const isRealUserMessage = (event: SessionEvent): boolean =>
  event.role === "user" && !event.parts.some((p) => p.kind === "function_response");

/** The name a server-side tool goes by in Koroku's lines (`GOOGLE_SEARCH_WEB` → `google_search`). */
export function serverToolName(toolType: string | undefined): string {
  if (toolType === undefined) return "server_tool";
  if (toolType.startsWith("GOOGLE_SEARCH")) return "google_search";
  return toolType.toLowerCase();
}

export type ToolPayload = { name: string; role: "call" | "result"; json: string };

/**
 * A tool part as a tool's name, whether it is the call or its result, and its payload as JSON;
 * undefined for text and grounding. Code execution goes by the name `code_execution`.
 */
export function toolPayload(part: EventPart): ToolPayload | undefined {
  switch (part.kind) {
    case "function_call":
      return { name: part.name, role: "call", json: JSON.stringify(part.args ?? {}) };
    case "function_response":
      return { name: part.name, role: "result", json: JSON.stringify(part.response ?? {}) };
    case "server_tool_call":
      return {
        name: serverToolName(part.toolType),
        role: "call",
        json: JSON.stringify(part.args ?? {}),
      };
    case "server_tool_response":
      return {
        name: serverToolName(part.toolType),
        role: "result",
        json: JSON.stringify(part.response ?? {}),
      };
    case "executable_code":
      return {
        name: "code_execution",
        role: "call",
        json: JSON.stringify({ code: part.code ?? "" }),
      };
    case "code_execution_result":
      return {
        name: "code_execution",
        role: "result",
        json: JSON.stringify({ outcome: part.outcome, output: part.output ?? "" }),
      };
    default:
      return undefined;
  }
}

export const functionCallsOf = (event: SessionEvent): FunctionCallPart[] =>
  event.parts.filter((p): p is FunctionCallPart => p.kind === "function_call");
