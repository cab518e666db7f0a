import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeFetch } from "../../src/net/node-fetch.js";

describe("Node HTTP fetch for the Gemini SDK", () => {
  let server: Server;
  let slowBody: (() => void) | undefined;
  let base: string;
  const fetchNode = createNodeFetch();

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8");
      });
      req.on("end", () => {
        if (req.url === "/empty") {
          res.writeHead(204).end();
        } else if (req.url === "/bom") {
          res.writeHead(200, { "content-type": "text/plain" }).end("\uFEFFhello ü");
        } else if (req.url === "/slow-body") {
          // Headers now, the body never: the caller aborts in between.
          res.writeHead(200, { "content-type": "application/json" });
          res.write("{");
          slowBody?.();
        } else if (req.url === "/hang") {
          // Never answers: the caller's signal must end it.
        } else {
          res.setHeader("set-cookie", ["a=1", "b=2"]);
          res.writeHead(201, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              method: req.method,
              key: req.headers["x-goog-api-key"],
              body,
              url: req.url,
            }),
          );
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends method, headers and body and returns status, headers and JSON", async () => {
    const response = await fetchNode(`${base}/v1/models/m:generateContent?x=1`, {
      method: "POST",
      headers: { "x-goog-api-key": "k", "content-type": "application/json" },
      body: '{"a":"ü"}',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("set-cookie")).toBe("a=1, b=2");
    expect(await response.json()).toEqual({
      method: "POST",
      key: "k",
      body: '{"a":"ü"}',
      url: "/v1/models/m:generateContent?x=1",
    });
  });

  it("sends the headers of a Headers object too", async () => {
    const response = await fetchNode(`${base}/h`, {
      method: "POST",
      headers: new Headers({ "X-Goog-Api-Key": "from-headers" }),
      body: "",
    });
    expect(await response.json()).toMatchObject({ key: "from-headers" });
  });

  it("reads a body once, like fetch: bodyUsed, clone before reading, stream on demand", async () => {
    const response = await fetchNode(`${base}/bom`);
    expect(response).toBeInstanceOf(Response);
    expect(response.ok).toBe(true);
    expect(response.bodyUsed).toBe(false);
    const copy = response.clone();
    expect(await response.text()).toBe("hello ü");
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(TypeError);
    expect(() => response.clone()).toThrow(TypeError);
    expect(Buffer.from(await copy.arrayBuffer()).toString("utf8")).toBe("\uFEFFhello ü");
    const blob = await (await fetchNode(`${base}/bom`)).blob();
    expect(blob.type).toBe("text/plain");
    expect(blob.size).toBe(Buffer.byteLength("\uFEFFhello ü"));
    const streamed = await fetchNode(`${base}/bom`);
    expect(await new Response(streamed.body).text()).toBe("hello ü");
    expect(streamed.bodyUsed).toBe(true);
  });

  it("adds nothing to a Response's own properties, so all responses share one hidden class", async () => {
    // Own accessors or closures on each response would give each a shape of its own, and the
    // SDK code reading responses would keep being deoptimised.
    const response = await fetchNode(`${base}/bom`);
    expect(Reflect.ownKeys(response)).toEqual(Reflect.ownKeys(new Response(null)));
  });

  it("answers 204 without a body", async () => {
    const response = await fetchNode(`${base}/empty`);
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
    expect(await response.text()).toBe("");
  });

  it("rejects like fetch: AbortError when aborted, TypeError on a network failure", async () => {
    const controller = new AbortController();
    const pending = fetchNode(`${base}/hang`, { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await fetchNode(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe("fetch failed");
    expect(((error as TypeError).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("accepts an AbortSignal look-alike such as grammY's polyfill, and lets go of it", async () => {
    const listeners = new Set<() => void>();
    const lookAlike = {
      aborted: false,
      addEventListener: (_type: string, listener: () => void) => listeners.add(listener),
      removeEventListener: (_type: string, listener: () => void) => listeners.delete(listener),
    };
    const signal = lookAlike as unknown as AbortSignal;
    expect(await (await fetchNode(`${base}/done`, { signal })).json()).toMatchObject({
      url: "/done",
    });
    expect(listeners.size).toBe(0);
    const pending = fetchNode(`${base}/hang`, { signal });
    for (const listener of listeners) listener();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(listeners.size).toBe(0);
  });

  it("rejects at once when the signal is already aborted, and aborts after the headers too", async () => {
    await expect(fetchNode(`${base}/h`, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
    const controller = new AbortController();
    slowBody = () => controller.abort();
    await expect(
      fetchNode(`${base}/slow-body`, { signal: controller.signal }),
    ).rejects.toMatchObject({ name: "AbortError" });
  });
});
