import { createHash } from "node:crypto";

/**
 * A deterministic stand-in for Gemini's embedding model: a text's vector is the normalised sum
 * of one fixed pseudo-random direction per concept it names, and synonyms name the same concept,
 * so "sibling" and "sister" share a direction while unrelated words are nearly orthogonal.
 */
const SYNONYMS: ReadonlyArray<readonly string[]> = [
  ["sibling", "siblings", "sister", "sisters", "brother", "brothers"],
  [
    "suggest",
    "suggested",
    "suggests",
    "recommend",
    "recommended",
    "recommends",
    "advise",
    "advised",
  ],
  ["eat", "eating", "ate", "dinner", "lunch", "restaurant", "trattoria", "dine", "dining", "meal"],
  ["car", "cars", "vehicle", "automobile"],
  ["doctor", "physician", "gp"],
  ["allergy", "allergic", "intolerance"],
  ["passport", "visa", "travel document"],
  ["birthday", "born", "birth"],
  ["flat", "apartment", "home", "house"],
  ["job", "work", "employer", "office"],
  ["dog", "puppy", "hound"],
  ["cat", "kitten"],
  ["password", "passcode", "pin", "code"],
];

/** Words that carry no meaning of their own. */
const STOP = new Set(
  "a an the my your our their his her its of to in on at for and or is was were be been did do does where what who when which we i you he she it they me us them with from by as that this".split(
    " ",
  ),
);

const concept = new Map<string, string>();
for (const group of SYNONYMS) for (const word of group) concept.set(word, group[0] as string);

const directionCache = new Map<string, Float32Array>();

/** A fixed pseudo-random unit direction for a concept (xorshift seeded by its hash). */
function direction(name: string, dims: number): Float32Array {
  const key = `${dims}:${name}`;
  const cached = directionCache.get(key);
  if (cached) return cached;
  let state = createHash("sha256").update(name).digest().readUInt32LE(0) || 1;
  const v = new Float32Array(dims);
  for (let i = 0; i < dims; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    v[i] = ((state >>> 0) / 2 ** 32) * 2 - 1;
  }
  directionCache.set(key, v);
  return v;
}

export function fakeEmbedding(text: string, dims: number): Float32Array {
  const sum = new Float32Array(dims);
  const words = text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== "" && !STOP.has(w));
  for (const word of words) {
    const d = direction(concept.get(word) ?? word, dims);
    for (let i = 0; i < dims; i++) sum[i] = (sum[i] as number) + (d[i] as number);
  }
  let norm = 0;
  for (const v of sum) norm += v * v;
  norm = Math.sqrt(norm) || 1;
  return sum.map((v) => v / norm);
}

/** What the fake Gemini takes at embedContent and batchEmbedContents (the API's own limits). */
export const EMBED_PATH =
  /^\/(v1|v1beta|v1alpha)\/models\/([^/]+):(embedContent|batchEmbedContents)$/;
const MAX_BATCH = 100;
const TASK_TYPES = new Set([
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY",
]);
const DEFAULT_DIMS = 3072;

type EmbedRequest = {
  model?: unknown;
  content?: { parts?: Array<{ text?: unknown }> };
  taskType?: unknown;
  outputDimensionality?: unknown;
};

/** The vector an embedContent request asks for, or why Gemini would refuse it. */
function embedOne(request: EmbedRequest, model: string): Float32Array | string {
  if (request.model !== undefined && request.model !== `models/${model}`) {
    return `* BatchEmbedContentsRequest.requests: model "${String(request.model)}" differs from the request's model "models/${model}"`;
  }
  const parts = request.content?.parts;
  if (!Array.isArray(parts) || parts.length === 0) return "* content: must have parts";
  const text = parts.map((p) => (typeof p.text === "string" ? p.text : "")).join(" ");
  if (text.trim() === "") return "* content.parts: text must not be empty";
  if (request.taskType !== undefined && !TASK_TYPES.has(String(request.taskType))) {
    return `Invalid value at 'task_type' (${String(request.taskType)})`;
  }
  const dims = request.outputDimensionality ?? DEFAULT_DIMS;
  if (typeof dims !== "number" || !Number.isInteger(dims) || dims < 128 || dims > 3072) {
    return `* outputDimensionality must be an integer from 128 to 3072, not ${String(dims)}`;
  }
  return fakeEmbedding(text, dims);
}

/** The answer to an embedding request, or a 400's message. */
export function answerEmbedding(
  method: "embedContent" | "batchEmbedContents",
  model: string,
  body: unknown,
): { body: unknown } | { problem: string } {
  const json = (body ?? {}) as { requests?: unknown };
  if (method === "embedContent") {
    const one = embedOne(json as EmbedRequest, model);
    return typeof one === "string"
      ? { problem: one }
      : { body: { embedding: { values: Array.from(one) } } };
  }
  if (!Array.isArray(json.requests) || json.requests.length === 0) {
    return { problem: "* BatchEmbedContentsRequest.requests: must not be empty" };
  }
  if (json.requests.length > MAX_BATCH) {
    return {
      problem: `* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch`,
    };
  }
  const values: number[][] = [];
  for (const request of json.requests as EmbedRequest[]) {
    const one = embedOne(request, model);
    if (typeof one === "string") return { problem: one };
    values.push(Array.from(one));
  }
  return { body: { embeddings: values.map((v) => ({ values: v })) } };
}
