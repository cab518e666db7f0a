/**
 * The most bytes one Gemini response may carry, streamed or not. Gemini's largest text answers
 * (65,536 output tokens, thought signatures, grounding) come to a few hundred kilobytes, but an
 * image model sends its pictures inline as base64, a 4K PNG in tens of megabytes; this leaves room
 * for those and stops a response that a broken model or a proxy at GEMINI_BASE_URL inflates.
 */
export const MAX_MODEL_RESPONSE_BYTES = 32 * 1024 * 1024;

/** Where a reshaper puts the bytes it passes on: a stream's controller. */
export type ReshapedOutput = { enqueue(chunk: Uint8Array): void };

/**
 * What the cap hands the bytes it counted to, in the shape of a transformer's `transform` and
 * `flush` (so that a TransformStream can run one too).
 */
export type Reshaper = {
  transform(chunk: Uint8Array, output: ReshapedOutput): void;
  flush(output: ReshapedOutput): void;
};

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
    // Read straight from the body as the reader asks: a pipe through a TransformStream costs a
    // writable side, its queue and their promises for every chunk of every answer in flight.
    const source = response.body.getReader();
    let passedOn = false;
    let output: ReshapedOutput = { enqueue: () => {} };
    const counted = new ReadableStream<Uint8Array>({
      start(controller) {
        output = {
          enqueue(chunk) {
            passedOn = true;
            controller.enqueue(chunk);
          },
        };
      },
      async pull(controller) {
        // The stream asks again only once something went out: a reshaper holding a read back
        // (part of an event) means reading on.
        passedOn = false;
        while (!passedOn) {
          const { done, value } = await source.read();
          if (done) {
            then?.flush(output);
            controller.close();
            return;
          }
          seen += value.byteLength;
          if (seen > maxBytes) {
            controller.error(new ResponseTooLargeError(maxBytes));
            await source.cancel();
            return;
          }
          if (then) then.transform(value, output);
          else output.enqueue(value);
        }
      },
      cancel: (reason) => source.cancel(reason),
    });
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
