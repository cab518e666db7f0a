import { connect, type Socket } from "node:net";

const HEADER_END = Buffer.from("\r\n\r\n");
const STATUS_LINE = /^HTTP\/1\.1 (\d{3})/;
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i;
const CONNECTION_CLOSE = /\r\nconnection: *close/i;

export type WebhookPoster = {
  /** POSTs one update (JSON) and resolves when the webhook answered 200. */
  post(body: string): Promise<void>;
  close(): void;
};

type Request = {
  bytes: Buffer;
  retried: boolean;
  resolve(): void;
  reject(error: Error): void;
};

/** One kept-alive connection: a request at a time, as Telegram sends them. */
class Connection {
  readonly socket: Socket;
  request: Request | undefined;
  /** Whether this connection already answered a request: a reset then is a stale socket. */
  reused = false;
  error: Error | undefined;
  #received: Buffer = Buffer.alloc(0);

  constructor(
    port: number,
    private readonly onAnswered: (connection: Connection) => void,
    private readonly onLost: (connection: Connection, request: Request | undefined) => void,
  ) {
    this.socket = connect({ host: "127.0.0.1", port, noDelay: true });
    this.socket.on("data", (chunk: Buffer) => this.#read(chunk));
    this.socket.on("error", (error) => {
      this.error = error;
    });
    this.socket.on("close", () => this.onLost(this, this.#take()));
  }

  send(request: Request): void {
    this.request = request;
    this.socket.write(request.bytes);
  }

  #take(): Request | undefined {
    const request = this.request;
    this.request = undefined;
    this.#received = Buffer.alloc(0);
    return request;
  }

  #read(chunk: Buffer): void {
    const received = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk]);
    const headerEnd = received.indexOf(HEADER_END);
    if (headerEnd < 0) {
      this.#received = received;
      return;
    }
    const head = received.toString("latin1", 0, headerEnd);
    const status = Number(STATUS_LINE.exec(head)?.[1]);
    const length = CONTENT_LENGTH.exec(head)?.[1];
    const request = this.request;
    if (!request || Number.isNaN(status) || length === undefined) {
      // The service always answers with a Content-Length; anything else is not worth parsing.
      const what = request ? `answered without a Content-Length: ${head}` : "answered unasked";
      this.#take()?.reject(new Error(`the webhook ${what}`));
      this.socket.destroy();
      return;
    }
    const bodyEnd = headerEnd + HEADER_END.length + Number(length);
    if (received.length < bodyEnd) {
      this.#received = received;
      return;
    }
    const body = received.toString("utf8", headerEnd + HEADER_END.length, bodyEnd);
    this.#take();
    this.reused = true;
    if (status === 200) request.resolve();
    else request.reject(new Error(`the webhook answered ${status}: ${body}`));
    if (CONNECTION_CLOSE.test(head)) this.socket.end();
    else this.onAnswered(this);
  }
}

/**
 * Posts Telegram's webhook requests to the service over at most `maxSockets` kept-alive
 * connections, with the HTTP/1.1 written and read by hand. node:http's client cost the load
 * generator more CPU per request than the fake Telegram's server did, CPU taken from the same two
 * cores the service runs on; the bytes on the wire are the same.
 */
export function createWebhookPoster(options: {
  baseUrl: string;
  secret: string;
  maxSockets: number;
}): WebhookPoster {
  const url = new URL("/telegram/webhook", options.baseUrl);
  const port = Number(url.port);
  const head = [
    `POST ${url.pathname} HTTP/1.1`,
    `Host: ${url.host}`,
    "Content-Type: application/json",
    `X-Telegram-Bot-Api-Secret-Token: ${options.secret}`,
  ].join("\r\n");
  const idle: Connection[] = [];
  const queued: Request[] = [];
  const open = new Set<Connection>();
  let closed = false;

  const dispatch = (request: Request) => {
    const connection = idle.pop() ?? (open.size < options.maxSockets ? opened() : undefined);
    if (connection) connection.send(request);
    else queued.push(request);
  };

  const answered = (connection: Connection) => {
    const next = queued.shift();
    if (next) connection.send(next);
    else idle.push(connection);
  };

  // A kept-alive socket that the server closed just as it was reused loses its request; Telegram
  // would deliver the update again, so this does too (once): the inbox stores an update_id only
  // once, should the first attempt have arrived after all.
  const lost = (connection: Connection, request: Request | undefined) => {
    open.delete(connection);
    const at = idle.indexOf(connection);
    if (at >= 0) idle.splice(at, 1);
    const next = queued.shift();
    if (next) dispatch(next);
    if (request === undefined) return;
    if (connection.reused && !request.retried && !closed) {
      dispatch({ ...request, retried: true });
      return;
    }
    const why = connection.error ? `: ${connection.error.message}` : "";
    request.reject(
      new Error(`the connection to ${url.origin} closed before the webhook answered${why}`),
    );
  };

  const opened = () => {
    const connection = new Connection(port, answered, lost);
    open.add(connection);
    return connection;
  };

  return {
    post(body) {
      const length = Buffer.byteLength(body);
      const bytes = Buffer.from(`${head}\r\nContent-Length: ${length}\r\n\r\n${body}`);
      return new Promise((resolve, reject) => {
        dispatch({ bytes, retried: false, resolve, reject });
      });
    },
    close() {
      closed = true;
      for (const request of queued.splice(0)) request.reject(new Error("the poster was closed"));
      for (const connection of open) connection.socket.destroy();
    },
  };
}
