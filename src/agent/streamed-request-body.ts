/**
 * Request bodies at least this long are streamed. Below it the copies cost nothing worth a stream.
 */
const STREAM_FROM_CHARS = 256 * 1024;
/** Characters encoded per chunk: small against a body of inline media, large against a syscall. */
const CHUNK_CHARS = 64 * 1024;

/** The string as a stream of UTF-8 chunks, never cutting a surrogate pair in two. */
function utf8Chunks(body: string): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= body.length) {
        controller.close();
        return;
      }
      let end = Math.min(at + CHUNK_CHARS, body.length);
      const last = body.charCodeAt(end - 1);
      if (end < body.length && last >= 0xd800 && last <= 0xdbff) end--;
      controller.enqueue(Buffer.from(body.slice(at, end), "utf8"));
      at = end;
    },
  });
}

/**
 * `fetch` that sends a large string body (a Gemini request carrying inline media: the SDK hands
 * over the JSON as one string) as a stream of small UTF-8 chunks. Given the string, Node's fetch
 * checks it for lone surrogates, encodes it whole and copies the encoded bytes again before it
 * writes them: three body-sized buffers besides the string, for every request of every turn in
 * flight. Streamed, only a chunk at a time is encoded.
 */
export function streamLargeBodies(fetchImpl: typeof fetch): typeof fetch {
  return (input, init) => {
    const body = init?.body;
    if (typeof body !== "string" || body.length < STREAM_FROM_CHARS) return fetchImpl(input, init);
    // Chunked, without a content-length: that would take another pass over the whole string.
    return fetchImpl(input, { ...init, body: utf8Chunks(body), duplex: "half" });
  };
}
