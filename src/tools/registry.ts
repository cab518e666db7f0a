import type { FunctionDeclaration } from "@google/genai";
import { z } from "zod";
import { GeminiError } from "../agent/gemini-errors.js";
import type { RecallScope } from "../scope/recall-scope.js";
import type { MediaPart } from "../session/events.js";

/** A file a tool sends to the conversation. */
export type FileToSend = {
  bytes: Buffer;
  name: string;
  mimeType: string;
  caption?: string;
};

export type SentAs = "photo" | "document";

export interface ToolContext {
  chatId: string;
  /** The conversation's recall scope: the file tools work in its folder of the workspace only. */
  scope: RecallScope;
  /**
   * Sends a file to the conversation the turn belongs to (its chat and topic), as a photo or a
   * document; absent where there is no chat to send to (the terminal). `outcome` is what the call
   * returns once the file went out as `sentAs`: it is recorded the moment Telegram takes the
   * file, so that a run after a crash answers the call with it instead of sending the file again.
   */
  sendFile?(file: FileToSend, outcome: (sentAs: SentAs) => WithFiles): Promise<SentAs>;
  /** Aborted when the user stops the answer: a tool that runs long (a command) ends there. */
  signal?: AbortSignal;
  /** The turn is a scheduled task's run, which nobody typed now. */
  origin?: "scheduled_task";
  /**
   * Who the turn answers: the sender ALLOWED_USER_IDS let in (a user, or a group or channel
   * posting anonymously), or a scheduled run's task's creator; absent in the terminal.
   */
  askedBy?: number;
}

/**
 * What a tool returns with files (stored as attachments): `output` is the model's answer. Files it
 * sent to the chat itself (send_file) are kept with the call, for /history. Files it `made`
 * (generate_image) are kept in the conversation's context, where the model sees them like any
 * picture, and go out with the answer, recorded as its messages are.
 */
export class WithFiles {
  constructor(
    readonly output: unknown,
    readonly files: MediaPart[],
    readonly made = false,
  ) {}

  /** What the call answers, as it is stored and sent to the model. */
  outcome(): { response: { output: unknown }; files: MediaPart[]; made?: true } {
    return {
      response: { output: toJsonValue(this.output) },
      files: this.files,
      ...(this.made ? { made: true as const } : {}),
    };
  }
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  /** A z.object: the model always calls a function with named arguments. */
  schema: S;
  run(args: z.infer<S>, ctx: ToolContext): Promise<unknown>;
  /**
   * The calls of one model response run concurrently; a tool that changes state sets 1 so its
   * calls run one at a time, in the order the model gave them. Unset: no limit.
   */
  maxConcurrent?: number;
}

export type ToolOutcome =
  | {
      ok: true;
      response: { output: unknown };
      files?: MediaPart[];
      /** Files of the result the model sees beside it (an MCP tool's images). */
      media?: MediaPart[];
      /** The files are pictures the tool made (generate_image): seen by the model, sent with the answer. */
      made?: boolean;
    }
  | { ok: false; response: { error: string } };

export interface ToolRegistry {
  declarations(): FunctionDeclaration[];
  /** Never throws: every failure becomes an `{ error }` response the model can read. */
  execute(name: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome>;
  /** The tool's maxConcurrent (undefined for unknown tools, whose calls fail at once). */
  concurrencyOf(name: string): number | undefined;
  /** Whether the registry has this tool (concurrencyOf cannot tell for a tool without a limit). */
  knows?(name: string): boolean;
}

export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool<S> {
  return tool;
}

// The API rejects other names with a 400 for the whole request (64 characters at most).
const TOOL_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

// The JSON Schema keywords Gemini documents for parametersJsonSchema. Others (e.g. "$schema",
// "exclusiveMinimum", "pattern") are stripped: the API may reject or silently misread them, and
// zod still enforces the full schema when the call arrives.
const GEMINI_SCHEMA_KEYS = new Set([
  "$id",
  "$defs",
  "$ref",
  "$anchor",
  "type",
  "format",
  "title",
  "description",
  "enum",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "anyOf",
  "oneOf",
  "properties",
  "additionalProperties",
  "required",
  "propertyOrdering",
]);
const SCHEMA_MAP_KEYS = new Set(["properties", "$defs"]);
const SCHEMA_LIST_KEYS = new Set(["prefixItems", "anyOf", "oneOf"]);
const SCHEMA_VALUE_KEYS = new Set(["items", "additionalProperties"]);

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function mapValues(
  record: Record<string, unknown>,
  fn: (value: unknown) => unknown,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}

/** A JSON Schema with only the keywords Gemini documents for parametersJsonSchema. */
export function toGeminiSchema(schema: unknown): unknown {
  if (!isRecord(schema)) return schema;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!GEMINI_SCHEMA_KEYS.has(key)) continue;
    if (SCHEMA_MAP_KEYS.has(key) && isRecord(value)) {
      result[key] = mapValues(value, toGeminiSchema);
    } else if (SCHEMA_LIST_KEYS.has(key) && Array.isArray(value)) {
      result[key] = value.map(toGeminiSchema);
    } else if (SCHEMA_VALUE_KEYS.has(key)) {
      result[key] = toGeminiSchema(value);
    } else {
      result[key] = value;
    }
  }
  return result;
}

function declare(tool: Tool): FunctionDeclaration {
  // "input" describes what the model must send: fields with defaults stay optional.
  const schema = toGeminiSchema(z.toJSONSchema(tool.schema, { io: "input" }));
  if (!isRecord(schema) || schema.type !== "object") {
    throw new Error(`tool "${tool.name}" must take a z.object schema of named arguments`);
  }
  const hasParameters = isRecord(schema.properties) && Object.keys(schema.properties).length > 0;
  // Gemini rejects an object schema without properties; a tool without arguments omits it.
  return hasParameters
    ? { name: tool.name, description: tool.description, parametersJsonSchema: schema }
    : { name: tool.name, description: tool.description };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "arguments";
  return `${field}: ${issue.message}`;
}

function errorMessage(error: unknown): string {
  // A Gemini call's failure (generate_image's) in the words fit for the chat: its detail names
  // the address it called and the attempts, which are the log's.
  if (error instanceof GeminiError) return error.userMessage;
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  return `tool failed: ${JSON.stringify(toJsonValue(error))}`;
}

/** Turns a tool's output into plain JSON so it survives storage and the API request. */
export function toJsonValue(value: unknown, ancestors: readonly object[] = []): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object") return value === undefined ? null : String(value);
  if (ancestors.includes(value)) return "[Circular]";
  const inner = [...ancestors, value];
  if ("toJSON" in value && typeof value.toJSON === "function") {
    return toJsonValue(value.toJSON(), inner);
  }
  if (value instanceof Error) return value.message;
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item, inner));
  if (value instanceof Map) return toJsonValue(Object.fromEntries(value), inner);
  if (value instanceof Set) return toJsonValue([...value], inner);
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    result[key] = toJsonValue(item, inner);
  }
  return result;
}

function failure(error: string): ToolOutcome {
  return { ok: false, response: { error } };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function createToolRegistry(tools: Tool[]): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    if (!TOOL_NAME_PATTERN.test(tool.name)) {
      throw new Error(
        `invalid tool name "${tool.name}": start with a letter or "_", then use letters, ` +
          'digits, "_", ".", ":" or "-", 64 characters at most',
      );
    }
    if (byName.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
    byName.set(tool.name, tool);
  }
  const names = [...byName.keys()];
  const declarations = tools.map((tool) => deepFreeze(declare(tool)));

  async function execute(name: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
    const tool = byName.get(name);
    if (!tool) {
      return failure(`unknown tool "${name}"; available: ${names.join(", ")}`);
    }
    try {
      // Gemini omits args for a call without parameters.
      const parsed = tool.schema.safeParse(args ?? {});
      if (!parsed.success) {
        const issues = parsed.error.issues.map(describeIssue).join("; ");
        return failure(`invalid arguments for ${name}: ${issues}`);
      }
      const output = await tool.run(parsed.data, ctx);
      if (output instanceof WithFiles) return { ok: true, ...output.outcome() };
      return { ok: true, response: { output: toJsonValue(output) } };
    } catch (error) {
      return failure(errorMessage(error));
    }
  }

  return {
    // Built once per registry and frozen: every turn shares them, and nobody can change them.
    declarations: () => [...declarations],
    execute,
    concurrencyOf: (name) => byName.get(name)?.maxConcurrent,
    knows: (name) => byName.has(name),
  };
}

/**
 * Several registries as one: the first that knows a name runs it. Declarations are asked of each
 * every time, so a registry whose tools change (MCP servers) is followed.
 */
export function combineRegistries(registries: readonly ToolRegistry[]): ToolRegistry {
  const owner = (name: string) =>
    registries.find((r) => (r.knows ? r.knows(name) : r.concurrencyOf(name) !== undefined));
  return {
    declarations: () => registries.flatMap((r) => r.declarations()),
    execute: (name, args, ctx) => {
      const found = owner(name) ?? registries[0];
      if (!found) return Promise.resolve(failure(`unknown tool "${name}"`));
      return found.execute(name, args, ctx);
    },
    concurrencyOf: (name) => owner(name)?.concurrencyOf(name),
    knows: (name) => owner(name) !== undefined,
  };
}
