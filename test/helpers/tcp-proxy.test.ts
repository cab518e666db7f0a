import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.js";

let echo: Server;
let proxy: TcpProxy;

beforeEach(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  const address = echo.address();
  if (address === null || typeof address === "string") throw new Error("no echo address");
  proxy = await startTcpProxy({ host: "127.0.0.1", port: address.port });
});

afterEach(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** What comes back for `text`, or "closed" when the connection ends first. */
function exchange(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    socket.once("data", (data) => resolve(data.toString("utf8")));
    socket.once("close", () => resolve("closed"));
    socket.on("error", () => {});
    socket.write(text);
  });
}

/** A fresh connection's answer to "ping", or "closed" when the proxy resets it. */
async function ping(): Promise<string> {
  const socket = await open().catch(() => undefined);
  if (!socket) return "closed";
  const answer = await exchange(socket, "ping");
  socket.destroy();
  return answer;
}

describe("tcp proxy", () => {
  it("forwards both ways", async () => {
    expect(await ping()).toBe("ping");
  });

  it("drops open connections and keeps accepting new ones", async () => {
    const socket = await open();
    const closed = new Promise((resolve) => socket.once("close", resolve));
    proxy.dropConnections();
    await closed;
    expect(await ping()).toBe("ping");
  });

  it("refuses connections while cut, until restored", async () => {
    const socket = await open();
    proxy.cut();
    expect(await exchange(socket, "late")).toBe("closed");
    expect(await ping()).toBe("closed");
    proxy.restore();
    expect(await ping()).toBe("ping");
  });

  it("silences open connections both ways without closing them; new ones go through", async () => {
    const socket = await open();
    const heard: string[] = [];
    socket.on("data", (data) => heard.push(data.toString("utf8")));
    proxy.silence();
    socket.write("anyone there?");
    // A round trip on a new connection, after what the silenced one sent.
    expect(await ping()).toBe("ping");
    expect(heard).toEqual([]);
    expect(socket.destroyed).toBe(false);
    socket.destroy();
  });

  it("cuts when an open connection sends, without forwarding what it sent", async () => {
    const socket = await open();
    const cut = proxy.cutOnNextSend();
    expect(await ping()).toBe("ping");
    expect(await exchange(socket, "query")).toBe("closed");
    await cut;
    expect(await ping()).toBe("closed");
  });
});
