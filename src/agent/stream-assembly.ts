import type {
  GenerateContentResponse,
  GenerateContentResponseUsageMetadata,
  GroundingMetadata,
  Part,
  UrlContextMetadata,
} from "@google/genai";

/**
 * Puts a streamed answer back together as the one response Gemini would have sent unstreamed.
 *
 * Gemini streams a text part as pieces in consecutive chunks, and Gemini 3 sends a part's
 * thoughtSignature on its own in the last chunk, on a part with empty text. Consecutive text
 * pieces of the same kind (thought or answer) are therefore one part, which keeps the signature
 * any of its pieces carried; a second signature starts a new part, since each signature belongs
 * to the part it came with. Function calls arrive whole and are never merged.
 */
export class StreamAssembly {
  readonly parts: Part[] = [];
  /** Whether any chunk arrived (a failure after one means the answer must start over). */
  received = false;
  usage: GenerateContentResponseUsageMetadata | undefined;
  finishReason: string | undefined;
  blockReason: string | undefined;
  /** Sent with the chunk that ends the answer; the latest one is the answer's. */
  groundingMetadata: GroundingMetadata | undefined;
  urlContextMetadata: UrlContextMetadata | undefined;
  #visible = "";

  /** Adds one chunk; true when the visible answer (thoughts excluded) grew. */
  add(chunk: GenerateContentResponse): boolean {
    this.received = true;
    if (chunk.usageMetadata) this.usage = chunk.usageMetadata;
    // Koroku asks for one candidate; should several come, the first is the answer.
    const candidate = chunk.candidates?.[0];
    if (candidate?.finishReason !== undefined) this.finishReason = candidate.finishReason;
    if (candidate?.groundingMetadata) this.groundingMetadata = candidate.groundingMetadata;
    if (candidate?.urlContextMetadata) this.urlContextMetadata = candidate.urlContextMetadata;
    const blocked = chunk.promptFeedback?.blockReason;
    if (blocked !== undefined) this.blockReason = blocked;
    const before = this.#visible.length;
    for (const part of candidate?.content?.parts ?? []) this.#addPart(part);
    return this.#visible.length > before;
  }

  /**
   * Gemini has finished this answer without asking for a function call: what it wrote goes out as
   * the turn's message (or the turn's error) instead of as a further draft.
   */
  get endsWithoutCall(): boolean {
    return this.finishReason !== undefined && !this.parts.some((part) => part.functionCall);
  }

  /** The answer so far as the user sees it. */
  get visibleText(): string {
    return this.#visible;
  }

  #addPart(part: Part): void {
    const last = this.parts.at(-1);
    if (isTextLike(part) && last !== undefined && isTextLike(last) && joinable(last, part)) {
      const joined: Part = { ...last, text: (last.text ?? "") + (part.text ?? "") };
      if (part.thoughtSignature !== undefined) joined.thoughtSignature = part.thoughtSignature;
      this.parts[this.parts.length - 1] = joined;
    } else {
      this.parts.push({ ...part });
    }
    if (part.text !== undefined && !part.thought) this.#visible += part.text;
  }
}

const TEXT_KEYS = new Set(["text", "thought", "thoughtSignature"]);

/** A text part, or a bare signature part (which Gemini uses to close a text part). */
function isTextLike(part: Part): boolean {
  return Object.entries(part).every(([key, value]) => value === undefined || TEXT_KEYS.has(key));
}

function joinable(last: Part, next: Part): boolean {
  if (Boolean(last.thought) !== Boolean(next.thought)) return false;
  return last.thoughtSignature === undefined || next.thoughtSignature === undefined;
}
