/** What a response body's bytes go through: each read, then what is left once it ends. */
export type BodyStep = {
  /** Hands on what it will with `enqueue`; throws to fail the body (the source is cancelled). */
  transform(chunk: Uint8Array, enqueue: (bytes: Uint8Array) => void): void;
  flush?(enqueue: (bytes: Uint8Array) => void): void;
};

/**
 * `body` through `step`, read from its source as the reader reads (one read ahead, as a pipe
 * reads). Node's pipeThrough with a TransformStream costs several promises and queue operations a
 * chunk in each stage, and the Gemini client's fetch has two stages on every answer
 * (docs/decisions/0011-cpu-per-turn.md).
 */
export function transformBody(
  body: ReadableStream<Uint8Array>,
  step: BodyStep,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let handed = false;
  let cancelled = false;
  let out: ReadableStreamDefaultController<Uint8Array> | undefined;
  const enqueue = (bytes: Uint8Array) => {
    handed = true;
    out?.enqueue(bytes);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      out = controller;
    },
    async pull(controller) {
      handed = false;
      try {
        // A pull must hand something on or end the body, or the reader would wait forever.
        while (!handed) {
          const { done, value } = await reader.read();
          if (done) {
            // A body its reader cancelled ends here, with nothing more to hand on.
            if (cancelled) return;
            step.flush?.(enqueue);
            controller.close();
            return;
          }
          step.transform(value, enqueue);
        }
      } catch (error) {
        await reader.cancel(error).catch(() => {});
        throw error;
      }
    },
    cancel: (reason) => {
      cancelled = true;
      return reader.cancel(reason);
    },
  });
}

/** `response` with its body put through `step`; its status and headers as they were. */
export function withBodyStep(response: Response, step: BodyStep): Response {
  if (response.body === null) return response;
  return new Response(transformBody(response.body, step), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
