import type { Part } from "@google/genai";

/** How the fake cuts an answer into `:streamGenerateContent?alt=sse` events. */
export interface StreamShape {
  /** Most characters (code points) of text one chunk carries. */
  chunkChars: number;
  /** Wait between two chunks. */
  chunkDelayMs: number;
}

export const DEFAULT_STREAM_SHAPE: StreamShape = { chunkChars: 40, chunkDelayMs: 0 };

type Reply = {
  candidates?: {
    content?: { role: string; parts: Part[] };
    finishReason?: string;
    [key: string]: unknown;
  }[];
  usageMetadata: Record<string, unknown>;
  [key: string]: unknown;
};

/** Text cut into pieces of at most `size` code points (a surrogate pair is never split). */
function pieces(text: string, size: number): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

/** The pieces of one part, each a chunk's only part, as Gemini streams it. */
function streamedParts(part: Part, size: number): Part[] {
  const { text, thoughtSignature, ...rest } = part;
  // Function calls (and anything but text) come whole, signature included.
  if (text === undefined || Object.keys(rest).some((key) => key !== "thought")) return [part];
  const cut: Part[] = pieces(text, size).map((piece) => ({ ...rest, text: piece }));
  // Gemini 3 closes a signed text part with a last piece of empty text carrying the signature.
  if (thoughtSignature !== undefined) cut.push({ ...rest, text: "", thoughtSignature });
  return cut.length > 0 ? cut : [part];
}

/**
 * The chunks Gemini would stream for the answer `reply` (a whole generateContent response): one
 * part per chunk, the finish reason, the candidate's grounding and url-context metadata and the
 * final usage on the last one, the prompt's token
 * count on every one. An answer without candidates or parts is a single chunk, as it is.
 */
export function streamChunks(reply: Reply, shape: StreamShape): Reply[] {
  const candidate = reply.candidates?.[0];
  const parts = candidate?.content?.parts;
  if (candidate === undefined || parts === undefined || parts.length === 0) return [reply];
  const { candidates: _candidates, usageMetadata, ...meta } = reply;
  const { content: _content, finishReason, index: _index, ...extras } = candidate;
  const cut = parts.flatMap((part) => streamedParts(part, shape.chunkChars));
  const running = {
    promptTokenCount: usageMetadata.promptTokenCount,
    totalTokenCount: usageMetadata.promptTokenCount,
  };
  return cut.map((part, index) => {
    const last = index === cut.length - 1;
    return {
      candidates: [
        {
          content: { role: "model", parts: [part] },
          ...(last ? { finishReason, ...extras } : {}),
          index: 0,
        },
      ],
      usageMetadata: last ? usageMetadata : running,
      ...meta,
    };
  });
}
