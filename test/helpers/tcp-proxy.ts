import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP forwarder on 127.0.0.1 that a test can cut, to give one service process an outage of
 * its own (a database or API restarting) without touching the real server other tests share.
 */
export type TcpProxy = {
  /** Where the proxy listens on 127.0.0.1. */
  readonly port: number;
  /** Closes every open connection; new ones still go through (a dropped link). */
  dropConnections(): void;
  /** Closes every open connection and resets new ones until restore() (a server restarting). */
  cut(): void;
  /**
   * Arms a cut for the moment a connection that is open now sends bytes (a query on a pooled
   * connection): the bytes are not forwarded, then everything is cut as by cut(). Resolves then.
   */
  cutOnNextSend(): Promise<void>;
  /**
   * Makes every connection open now go silent both ways without closing it (a server gone in a
   * failover): what either side sends goes nowhere. New connections go through.
   */
  silence(): void;
  restore(): void;
  close(): Promise<void>;
};

type Pair = { client: Socket; upstream: Socket };

export async function startTcpProxy(
  target: { host: string; port: number },
  options: { port?: number } = {},
): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  const silenced = new WeakSet<Pair>();
  let refusing = false;
  let armed: { existing: ReadonlySet<Pair>; fired(): void } | undefined;

  const server = createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    const closeBoth = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on("error", closeBoth);
      socket.on("close", closeBoth);
    }
    client.on("data", (chunk: Buffer) => {
      if (silenced.has(pair)) return;
      if (armed?.existing.has(pair)) {
        const { fired } = armed;
        armed = undefined;
        cut();
        fired();
        return;
      }
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on("drain", () => client.resume());
    upstream.pipe(client);
  });

  const dropConnections = () => {
    for (const { client, upstream } of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  const cut = () => {
    refusing = true;
    dropConnections();
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") {
    throw new Error("tcp proxy: expected a TCP address after listen()");
  }

  return {
    port: address.port,
    dropConnections,
    cut,
    cutOnNextSend() {
      return new Promise((resolve) => {
        armed = { existing: new Set(pairs), fired: resolve };
      });
    },
    silence() {
      for (const pair of pairs) {
        silenced.add(pair);
        pair.upstream.unpipe(pair.client);
        // Read on into nothing, so the server's words never reach the client.
        pair.upstream.resume();
      }
    },
    restore() {
      refusing = false;
    },
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
