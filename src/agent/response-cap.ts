import type { Transformer } from "node:stream/web";

/**
 * The most bytes one Gemini response may carry, streamed or not. Gemini's largest text answers
 * (65,536 output tokens, thought signatures, grounding) come to a few hundred kilobytes, but an
 * image model sends its pictures inline as base64, a 4K PNG in tens of megabytes; this leaves room
 * for those and stops a response that a broken model or a proxy at GEMINI_BASE_URL inflates.
 */
export const MAX_MODEL_RESPONSE_BYTES = 32 * 1024 * 1024;

/** What the cap hands the bytes it counted to: a transformer's `transform` and `flush`. */
export type Reshaper = Pick<Transformer<Uint8Array, Uint8Array>, "transform" | "flush">;

/** A response body that went past its cap; nothing of it is kept. */
export class ResponseTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the response was larger than ${maxBytes} bytes`);
    this.name = "ResponseTooLargeError";
  }
}

/**
 * `fetch` whose response bodies error out as soon as they pass `maxBytes`: a declared length over
 * it is refused before a byte is read, and a streamed body is counted as it arrives, so memory
 * never holds more than the cap whatever the server sends. `reshape` may give a transformer the
 * counted bytes then pass through, in the same step: one stream between the body and its reader.
 */
export function capResponseBytes(
  fetchImpl: typeof fetch,
  maxBytes: number,
  reshape: (response: Response) => Reshaper | undefined = () => undefined,
): typeof fetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.body === null) return response;
    const declared = Number(response.headers.get("content-length") ?? Number.NaN);
    if (declared > maxBytes) {
      await response.body.cancel();
      throw new ResponseTooLargeError(maxBytes);
    }
    let seen = 0;
    const then = reshape(response);
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(new ResponseTooLargeError(maxBytes));
          else if (then?.transform) return then.transform(chunk, controller);
          else controller.enqueue(chunk);
        },
        flush: (controller) => then?.flush?.(controller),
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** Whether `error`, or an error under it, is a body that went past its cap. */
export function tooLargeIn(error: unknown): ResponseTooLargeError | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof ResponseTooLargeError) return current;
    current = current.cause;
  }
  return undefined;
}
