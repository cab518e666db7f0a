import http from "node:http";
import https from "node:https";
import { urlToHttpOptions } from "node:url";

/** grammY hands over a polyfill AbortSignal (the abort-controller package), not Node's own. */
type AnySignal = Pick<AbortSignal, "aborted" | "addEventListener" | "removeEventListener">;

const abortError = () => new DOMException("This operation was aborted", "AbortError");

/**
 * A Response over a body that is already in memory. Built on a null body, because Response's own
 * body is a web stream, and setting one up and draining it again costs more than the request;
 * reading methods decode the buffer directly, `body` makes the stream only if someone asks.
 * Everything is defined on the prototype: accessors defined on each instance would give every
 * response a hidden class of its own, and the code that reads responses would never be optimised.
 */
class BufferedResponse extends Response {
  readonly #bytes: Buffer | null;
  #used = false;

  constructor(bytes: Buffer | null, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  static {
    // @types/node declares Response's getters and methods as read-only instance properties, which
    // a subclass cannot override as accessors or methods; they are put on the prototype here.
    Object.defineProperties(BufferedResponse.prototype, {
      bodyUsed: {
        get(this: BufferedResponse) {
          return this.#used;
        },
      },
      body: {
        get(this: BufferedResponse) {
          return this.#bytes === null ? null : new Response(this.#take()).body;
        },
      },
      arrayBuffer: {
        async value(this: BufferedResponse): Promise<ArrayBuffer> {
          const bytes = this.#take();
          const { buffer, byteOffset, byteLength } = bytes;
          return buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer;
        },
      },
      blob: {
        async value(this: BufferedResponse): Promise<Blob> {
          return new Blob([this.#take()], { type: this.headers.get("content-type") ?? "" });
        },
      },
      text: {
        async value(this: BufferedResponse): Promise<string> {
          return this.#text();
        },
      },
      json: {
        async value(this: BufferedResponse): Promise<unknown> {
          return JSON.parse(this.#text());
        },
      },
      clone: {
        value(this: BufferedResponse): Response {
          if (this.#used) throw new TypeError("Response.clone: Body has already been consumed.");
          return new BufferedResponse(this.#bytes, this);
        },
      },
    });
  }

  #take(): Buffer {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
    this.#used = true;
    return this.#bytes ?? Buffer.alloc(0);
  }

  #text(): string {
    const text = this.#take().toString("utf8");
    // Like fetch's text(): a UTF-8 byte-order mark is not part of the text.
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
}

const MAX_CACHED_URLS = 100;

/**
 * `fetch` on Node's own HTTP client with keep-alive agents, for the Gemini SDK and grammY. The
 * built-in fetch (undici) and node-fetch cost more CPU per request than the rest of a turn's
 * bookkeeping together; both clients send JSON strings and read whole JSON answers, so a buffered
 * Response serves them. Honours the caller's AbortSignal (their request timeouts).
 */
export function createNodeFetch(): typeof fetch {
  const agents = {
    "http:": new http.Agent({ keepAlive: true }),
    "https:": new https.Agent({ keepAlive: true }),
  };
  // The clients call a handful of URLs (one per model, one per Bot API method) over and over.
  const targets = new Map<string, { url: URL; options: http.RequestOptions }>();
  const targetOf = (href: string) => {
    let target = targets.get(href);
    if (target === undefined) {
      const url = new URL(href);
      target = { url, options: urlToHttpOptions(url) };
      if (targets.size >= MAX_CACHED_URLS) targets.clear();
      targets.set(href, target);
    }
    return target;
  };
  return (input, init) => {
    const { url, options } = targetOf(input instanceof Request ? input.url : String(input));
    const signal: AnySignal | null | undefined = init?.signal;
    if (signal?.aborted) return Promise.reject(abortError());
    const given = init?.headers;
    // grammY passes a plain object, which Node's client takes as it is; the Gemini SDK a Headers.
    const headers =
      given && !Array.isArray(given) && !(given instanceof Headers)
        ? (given as Record<string, string>)
        : Object.fromEntries(given instanceof Headers ? given : new Headers(given));
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== "string") {
      return Promise.reject(new TypeError("this fetch sends string bodies only"));
    }
    const transport = url.protocol === "https:" ? https : http;
    return new Promise<Response>((resolve, reject) => {
      // Like fetch: an aborted request rejects as it is, a network failure as "fetch failed".
      const fail = (error: Error) => {
        signal?.removeEventListener("abort", onAbort);
        reject(
          error.name === "AbortError" ? error : new TypeError("fetch failed", { cause: error }),
        );
      };
      // Listening here rather than handing the signal to http.request: Node would wrap a
      // polyfill in a signal of its own and watch the stream's end, a tenth of a request's cost.
      const onAbort = () => {
        const error = abortError();
        request.destroy(error);
        fail(error);
      };
      const request = transport.request(
        {
          ...options,
          method: init?.method ?? "GET",
          headers,
          agent: agents[url.protocol as keyof typeof agents],
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("error", fail);
          response.on("end", () => {
            signal?.removeEventListener("abort", onAbort);
            const status = response.statusCode ?? 500;
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(response.headers)) {
              for (const v of Array.isArray(value) ? value : [value ?? ""])
                responseHeaders.append(name, v);
            }
            const nullBody = status === 204 || status === 304;
            resolve(
              new BufferedResponse(nullBody ? null : Buffer.concat(chunks), {
                status,
                statusText: response.statusMessage ?? "",
                headers: responseHeaders,
              }),
            );
          });
        },
      );
      request.on("error", fail);
      signal?.addEventListener("abort", onAbort, { once: true });
      request.end(body ?? undefined);
    });
  };
}
