/**
 * The fake Gemini's request checks. They mirror the real API's 400s (same wording where it is
 * known) and are deliberately stricter in one place: a call the fake issued must come back with
 * its own signature in any turn, not only the current one, so persistence bugs surface at once.
 */

export const SKIP_SIGNATURE = "skip_thought_signature_validator";

export interface IssuedCall {
  signature: string;
  model: string;
  name: string;
  args: Record<string, unknown>;
  id?: string;
}

export interface SignatureBook {
  bySignature: ReadonlyMap<string, IssuedCall>;
  callKeys: ReadonlySet<string>;
  /** Signatures of the server-side tool parts the fake issued, each to its part's serverPartKey. */
  serverParts: ReadonlyMap<string, string>;
  signedServerParts: ReadonlySet<string>;
}

interface WireCall {
  name: string;
  args: unknown;
  id?: string;
}

interface WirePart {
  /** Decoded size of an inlineData part. */
  inlineBytes?: number;
  call?: WireCall;
  response?: { name: string; id?: string };
  signature?: string;
  /** A server-side tool's part: which field, its content key, and its id. */
  server?: { field: string; key: string; id?: string };
}

const SERVER_FIELDS = [
  "toolCall",
  "toolResponse",
  "executableCode",
  "codeExecutionResult",
] as const;
const SNAKE: Record<string, string> = {
  toolCall: "tool_call",
  toolResponse: "tool_response",
  executableCode: "executable_code",
  codeExecutionResult: "code_execution_result",
};

interface WireContent {
  role: "user" | "model";
  parts: WirePart[];
}

const DATA_FIELDS = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult",
  "toolCall",
  "toolResponse",
] as const;

// Proto JSON accepts both base64 alphabets for bytes fields; the placeholder is valid base64url.
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

const PAIRING_COUNT =
  "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
const RESPONSE_WITHOUT_CALL =
  "Please ensure that function response turn comes immediately after a function call turn.";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const field = (path: string, problem: string): string =>
  `* GenerateContentRequest.${path}: ${problem}\n`;

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical(value[key])]),
  );
}

/** Identifies a server-side tool part by its data (signature aside), whatever the key order. */
export const serverPartKey = (part: Record<string, unknown>): string =>
  JSON.stringify(
    canonical(
      Object.fromEntries(
        SERVER_FIELDS.filter((f) => part[f] !== undefined).map((f) => [f, part[f]]),
      ),
    ),
  );

/** Identifies a call by content; key order is ignored because stores (jsonb) may reorder it. */
export const callKey = (call: { name: string; args?: unknown; id?: string }): string =>
  JSON.stringify([call.name, canonical(call.args ?? {}), call.id ?? null]);

export const missingSignatureMessage = (name: string, position: number): string =>
  `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;

function parseNamed(value: unknown, path: string): { name: string; id?: string } | string {
  if (!isRecord(value) || typeof value.name !== "string" || value.name === "") {
    return field(`${path}.name`, "Name cannot be empty.");
  }
  if (value.id !== undefined && typeof value.id !== "string") {
    return field(`${path}.id`, "Invalid value, expected a string.");
  }
  return value.id === undefined ? { name: value.name } : { name: value.name, id: value.id };
}

/** The MIME types Gemini documents for inline data (images, audio, video, documents). */
export const GEMINI_INLINE_MIME_TYPES = new Set([
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/heic",
  "image/heif",
  "audio/wav",
  "audio/mp3",
  "audio/mpeg",
  "audio/aiff",
  "audio/aac",
  "audio/m4a",
  "audio/ogg",
  "audio/flac",
  "video/mp4",
  "video/mpeg",
  "video/mov",
  "video/quicktime",
  "video/avi",
  "video/x-flv",
  "video/mpg",
  "video/webm",
  "video/wmv",
  "video/3gpp",
  "application/pdf",
  "text/plain",
]);

/** Gemini's limit on inline data in one request. */
export const INLINE_LIMIT_BYTES = 100 * 1024 * 1024;

// Strict standard base64 (what the SDK sends for bytes): whole groups of four, padding at the end.
const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const base64Bytes = (data: string): number =>
  Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);

function checkInlineData(raw: unknown, path: string): string | undefined {
  if (!isRecord(raw)) return field(path, "Invalid value, expected a Blob object.");
  const { mimeType, data } = raw;
  if (typeof data !== "string" || data === "") return field(`${path}.data`, "Required field.");
  if (data.length % 4 !== 0 || !STRICT_BASE64.test(data)) {
    return `Invalid value at '${path}.data' (TYPE_BYTES), Base64 decoding failed.`;
  }
  if (typeof mimeType !== "string" || !GEMINI_INLINE_MIME_TYPES.has(mimeType)) {
    return `Unsupported MIME type: ${String(mimeType)}`;
  }
  return undefined;
}

/** A fileData part names an uploaded file by uri, with its MIME type (see gemini-files.ts). */
function checkFileData(raw: unknown, path: string): string | undefined {
  if (!isRecord(raw)) return field(path, "Invalid value, expected a FileData object.");
  const { fileUri, mimeType } = raw;
  if (typeof fileUri !== "string" || fileUri === "")
    return field(`${path}.file_uri`, "Required field.");
  if (typeof mimeType !== "string" || !GEMINI_INLINE_MIME_TYPES.has(mimeType)) {
    return `Unsupported MIME type: ${String(mimeType)}`;
  }
  return undefined;
}

function parsePart(raw: unknown, path: string): WirePart | string {
  if (!isRecord(raw)) return field(path, "Invalid value, expected a Part object.");
  const present = DATA_FIELDS.filter((key) => raw[key] !== undefined);
  if (present.length === 0) {
    return field(`${path}.data`, "required oneof field 'data' must have one initialized field");
  }
  if (present.length > 1) {
    return field(`${path}.data`, `oneof field 'data' is already set. Cannot set '${present[1]}'`);
  }
  const part: WirePart = {};
  const signature = raw.thoughtSignature;
  if (signature !== undefined) {
    if (typeof signature !== "string" || !BASE64.test(signature)) {
      return `Invalid value at '${path}.thought_signature' (TYPE_BYTES), Base64 decoding failed for "${String(signature)}"`;
    }
    part.signature = signature;
  }
  if (raw.inlineData !== undefined) {
    const problem = checkInlineData(raw.inlineData, `${path}.inline_data`);
    if (problem !== undefined) return problem;
    part.inlineBytes = base64Bytes((raw.inlineData as { data: string }).data);
  }
  if (raw.fileData !== undefined) {
    const problem = checkFileData(raw.fileData, `${path}.file_data`);
    if (problem !== undefined) return problem;
  }
  if (raw.functionCall !== undefined) {
    const named = parseNamed(raw.functionCall, `${path}.function_call`);
    if (typeof named === "string") return named;
    part.call = { ...named, args: isRecord(raw.functionCall) ? raw.functionCall.args : undefined };
  }
  if (raw.functionResponse !== undefined) {
    const named = parseNamed(raw.functionResponse, `${path}.function_response`);
    if (typeof named === "string") return named;
    part.response = named;
  }
  const serverField = SERVER_FIELDS.find((f) => raw[f] !== undefined);
  if (serverField !== undefined) {
    const data = raw[serverField];
    if (!isRecord(data)) {
      return field(`${path}.${SNAKE[serverField]}`, "Invalid value, expected an object.");
    }
    const id = typeof data.id === "string" ? data.id : undefined;
    part.server = {
      field: serverField,
      key: serverPartKey(raw),
      ...(id === undefined ? {} : { id }),
    };
  }
  return part;
}

function parseContent(raw: unknown, path: string): WireContent | string {
  if (!isRecord(raw)) return field(path, "Invalid value, expected a Content object.");
  const role = raw.role ?? "user";
  if (role !== "user" && role !== "model") return "Please use a valid role: user, model.";
  if (!Array.isArray(raw.parts) || raw.parts.length === 0) {
    return field(`${path}.parts`, "contents.parts must not be empty.");
  }
  const parts: WirePart[] = [];
  for (const [index, rawPart] of raw.parts.entries()) {
    const part = parsePart(rawPart, `${path}.parts[${index}]`);
    if (typeof part === "string") return part;
    parts.push(part);
  }
  return { role, parts };
}

function parseContents(raw: unknown): WireContent[] | string {
  if (!Array.isArray(raw) || raw.length === 0) {
    return field("contents", "contents is not specified");
  }
  const contents: WireContent[] = [];
  for (const [index, rawContent] of raw.entries()) {
    const parsed = parseContent(rawContent, `contents[${index}]`);
    if (typeof parsed === "string") return parsed;
    contents.push(parsed);
  }
  return contents;
}

const TOOL_KEYS = new Set(["functionDeclarations", "googleSearch", "urlContext", "codeExecution"]);
const BUILTIN_KEYS = ["googleSearch", "urlContext", "codeExecution"];

/** Built-in tools beside function declarations need the tool-combination flag. */
function checkCombination(tools: unknown[], toolConfig: unknown): string | undefined {
  const has = (key: string) => tools.some((tool) => isRecord(tool) && tool[key] !== undefined);
  const builtins = BUILTIN_KEYS.filter(has);
  if (!has("functionDeclarations") || builtins.length === 0) return undefined;
  const flag = isRecord(toolConfig) ? toolConfig.includeServerSideToolInvocations : undefined;
  return flag === true
    ? undefined
    : `Built-in tools (${builtins.join(", ")}) and function calling can be combined only with tool_config.include_server_side_tool_invocations set to true.`;
}

function checkTools(tools: unknown, toolConfig: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return field("tools", "Invalid value, expected a list.");
  for (const [toolIndex, tool] of tools.entries()) {
    for (const [key, value] of Object.entries(isRecord(tool) ? tool : {})) {
      if (!TOOL_KEYS.has(key))
        return `Invalid JSON payload received. Unknown name "${key}" at 'tools[${toolIndex}]': Cannot find field.`;
      if (key !== "functionDeclarations" && !isRecord(value)) {
        return field(`tools[${toolIndex}].${key}`, "Invalid value, expected an object.");
      }
    }
  }
  const combination = checkCombination(tools, toolConfig);
  if (combination !== undefined) return combination;
  const seen = new Set<string>();
  for (const [toolIndex, tool] of tools.entries()) {
    const declarations = isRecord(tool) ? (tool.functionDeclarations ?? []) : undefined;
    if (!Array.isArray(declarations)) {
      return field(`tools[${toolIndex}]`, "Invalid value, expected a Tool object.");
    }
    for (const [index, declaration] of declarations.entries()) {
      const name = isRecord(declaration) ? declaration.name : undefined;
      if (typeof name !== "string" || !FUNCTION_NAME.test(name)) {
        return field(
          `tools[${toolIndex}].function_declarations[${index}].name`,
          "Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.",
        );
      }
      if (seen.has(name)) return `Duplicate function declaration found: ${name}`;
      seen.add(name);
    }
  }
  return undefined;
}

const isUserMessage = (content: WireContent): boolean =>
  content.role === "user" && content.parts.some((part) => part.response === undefined);

/** Like the real API: the current turn (after the last real user message) must be signed. */
function checkSignatures(contents: WireContent[], book: SignatureBook): string | undefined {
  const turnStart = contents.findLastIndex(isUserMessage) + 1;
  for (const [index, content] of contents.entries()) {
    if (content.role !== "model") continue;
    const withCalls = content.parts.filter((part) => part.call !== undefined);
    for (const [order, part] of withCalls.entries()) {
      const mustBeSigned = index >= turnStart && order === 0;
      const problem = checkSignature(part, index + 1, book, mustBeSigned);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function checkSignature(
  part: WirePart,
  position: number,
  book: SignatureBook,
  mustBeSigned: boolean,
): string | undefined {
  const call = part.call;
  if (call === undefined || part.signature === SKIP_SIGNATURE) return undefined;
  if (part.signature === undefined) {
    const issuedByFake = book.callKeys.has(callKey(call));
    return mustBeSigned || issuedByFake ? missingSignatureMessage(call.name, position) : undefined;
  }
  const issued = book.bySignature.get(part.signature);
  return issued !== undefined && callKey(issued) === callKey(call)
    ? undefined
    : "Corrupted thought signature.";
}

/**
 * Server-side tool parts belong to the model's turn, a toolResponse follows its toolCall (same
 * id), and a part the fake signed comes back with its own signature.
 */
function checkServerParts(contents: WireContent[], book: SignatureBook): string | undefined {
  for (const [index, content] of contents.entries()) {
    const callIds = new Set<string>();
    for (const [order, part] of content.parts.entries()) {
      const server = part.server;
      if (server === undefined) continue;
      const path = `contents[${index}].parts[${order}].${SNAKE[server.field]}`;
      if (content.role !== "model")
        return field(path, "server-side tool parts are only allowed in model turns.");
      if (server.field === "toolCall" && server.id !== undefined) callIds.add(server.id);
      if (server.field === "toolResponse" && (server.id === undefined || !callIds.has(server.id))) {
        return field(`${path}.id`, "tool_response must follow the tool_call with the same id.");
      }
      if (part.signature === undefined) {
        if (book.signedServerParts.has(server.key)) {
          return `A server-side tool call is missing its thought_signature (contents[${index}].parts[${order}]). Send back every part of the model's turn as it was received.`;
        }
      } else if (
        part.signature !== SKIP_SIGNATURE &&
        book.serverParts.get(part.signature) !== server.key
      ) {
        return "Corrupted thought signature.";
      }
    }
  }
  return undefined;
}

const sortedNames = (items: { name: string }[]): string =>
  JSON.stringify(items.map((item) => item.name).sort());

const sortedIds = (items: { id?: string }[]): string =>
  JSON.stringify(items.map((item) => item.id ?? null).sort());

function checkAnswered(
  calls: WireCall[],
  next: WireContent | undefined,
  index: number,
): string | undefined {
  if (next === undefined) {
    return `${PAIRING_COUNT} The last content (contents[${index}]) is a model turn with ${calls.length} function call(s) and no function responses follow it.`;
  }
  const responses = next.parts.flatMap((part) => (part.response ? [part.response] : []));
  if (next.role !== "user" || responses.length !== calls.length) {
    return `${PAIRING_COUNT} contents[${index}] has ${calls.length} function call(s), contents[${index + 1}] has ${responses.length} function response(s).`;
  }
  if (sortedNames(calls) !== sortedNames(responses)) {
    return `Function response names ${sortedNames(responses)} in contents[${index + 1}] do not match the function calls ${sortedNames(calls)} in contents[${index}].`;
  }
  const callsHaveIds = calls.some((item) => item.id !== undefined);
  if (callsHaveIds && sortedIds(calls) !== sortedIds(responses)) {
    return `Function response ids ${sortedIds(responses)} in contents[${index + 1}] do not match the function call ids ${sortedIds(calls)} in contents[${index}].`;
  }
  return undefined;
}

function checkPairing(contents: WireContent[]): string | undefined {
  for (const [index, content] of contents.entries()) {
    const calls = content.parts.flatMap((part) => (part.call ? [part.call] : []));
    const hasResponses = content.parts.some((part) => part.response !== undefined);
    if (content.role === "user" && calls.length > 0) {
      return field(`contents[${index}]`, "function_call parts are only allowed in model turns.");
    }
    if (content.role === "model" && hasResponses) {
      return field(`contents[${index}]`, "function_response parts are only allowed in user turns.");
    }
    const previous = contents[index - 1];
    const previousCalls = previous?.parts.some((part) => part.call !== undefined) ?? false;
    if (hasResponses && !previousCalls) return RESPONSE_WITHOUT_CALL;
    if (calls.length > 0) {
      const problem = checkAnswered(calls, contents[index + 1], index);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

const ALTERNATION = "Please ensure that multiturn requests alternate between user and model.";

/** Two turns of one role in a row are refused. */
const checkAlternation = (contents: WireContent[]): string | undefined =>
  contents.some((content, i) => i > 0 && contents[i - 1]?.role === content.role)
    ? ALTERNATION
    : undefined;

/** Gemini 3.6 refuses a request that ends on the model's turn (older models continued it). */
const checkLastRole = (contents: WireContent[]): string | undefined =>
  contents.at(-1)?.role === "model"
    ? "Requests whose last content has the model role are not supported by this model."
    : undefined;

/**
 * Gemini 3 takes a thinking level, 2.5 a budget, never both; the Pro models, 3.7 and 3.8 Flash
 * and Gemini 4 have no MINIMAL level.
 * Model ids the fake does not know (tests' own) are taken for Gemini 3.
 */
function checkThinking(generationConfig: unknown, model: string): string | undefined {
  const thinking = isRecord(generationConfig) ? generationConfig.thinkingConfig : undefined;
  if (!isRecord(thinking)) return undefined;
  const { thinkingLevel: level, thinkingBudget: budget } = thinking;
  if (level !== undefined && budget !== undefined) {
    return "You can only set one of thinking budget and thinking level.";
  }
  if (level === undefined) return undefined;
  if (/^gemini-(1\.|2\.)/.test(model)) return "Thinking level is not supported for this model.";
  if (!["MINIMAL", "LOW", "MEDIUM", "HIGH"].includes(String(level))) {
    return `Invalid value at 'generation_config.thinking_config.thinking_level' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), "${String(level)}"`;
  }
  if (/-pro\b|^gemini-3\.[78]-flash$|^gemini-4-/.test(model) && level === "MINIMAL") {
    return "Thinking level MINIMAL is not supported for this model.";
  }
  return undefined;
}

/** Returns the 400 message the fake answers with, or undefined when the request is valid. */
export function validateRequest(
  body: unknown,
  book: SignatureBook,
  model = "",
): string | undefined {
  if (!isRecord(body)) return "Invalid JSON payload received. Expected a JSON object.";
  const contents = parseContents(body.contents);
  if (typeof contents === "string") return contents;
  const thinking = checkThinking(body.generationConfig, model);
  if (thinking !== undefined) return thinking;
  if (body.systemInstruction !== undefined) {
    const system = parseContent(body.systemInstruction, "system_instruction");
    if (typeof system === "string") return system;
  }
  const inline = contents.reduce(
    (sum, c) => sum + c.parts.reduce((n, p) => n + (p.inlineBytes ?? 0), 0),
    0,
  );
  if (inline > INLINE_LIMIT_BYTES) {
    return `Request payload size exceeds the limit: ${INLINE_LIMIT_BYTES} bytes of inline data.`;
  }
  return (
    checkTools(body.tools, body.toolConfig) ??
    checkSignatures(contents, book) ??
    checkServerParts(contents, book) ??
    checkPairing(contents) ??
    checkAlternation(contents) ??
    checkLastRole(contents)
  );
}
