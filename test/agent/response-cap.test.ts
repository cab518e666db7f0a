import { createServer, type Server } from "node:http";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createGeminiClient } from "../../src/agent/gemini-client.js";
import { GeminiAnswerTooLargeError } from "../../src/agent/gemini-errors.js";
import {
  capResponseBytes,
  type Reshaper,
  ResponseTooLargeError,
  tooLargeIn,
} from "../../src/agent/response-cap.js";
import { wholeEvents } from "../../src/agent/whole-sse-events.js";
import { call, type FakeGemini, startFakeGemini, text } from "../fakes/gemini.js";

const CAP = 64 * 1024;
const HUGE = "x".repeat(1024 * 1024);

describe("a Gemini answer past the response cap", () => {
  let fake: FakeGemini;
  beforeEach(async () => {
    fake = await startFakeGemini({ stream: { chunkChars: 4096 } });
  });
  afterEach(() => fake.close());

  const client = () =>
    createGeminiClient({
      apiKey: "key",
      baseUrl: fake.baseUrl,
      logger: pino({ level: "silent" }),
      maxResponseBytes: CAP,
      sleep: async () => {},
    });
  const ask = { model: "m", contents: [{ role: "user", parts: [{ text: "write" }] }] };

  it.each([
    ["unstreamed", undefined],
    ["streamed", { onText: () => {}, onRestart: () => {} }],
  ])("is refused, %s, with a message for the user and no second try", async (_, stream) => {
    fake.script(call("write_file", { path: "big.txt", content: HUGE }), text("never asked for"));
    const error = await client()
      .generate({ ...ask, stream })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(GeminiAnswerTooLargeError);
    expect((error as GeminiAnswerTooLargeError).userMessage).toMatch(
      /^Gemini's answer was larger than the 64 KB I can keep/,
    );
    expect(fake.requests).toHaveLength(1);
  });

  it("lets an answer under the cap through unchanged", async () => {
    fake.script(text("small"));
    const result = await client().generate(ask);
    expect(result.content.parts).toEqual([{ text: "small" }]);
  });
});

describe("capResponseBytes", () => {
  let server: Server;
  let url = "";
  let bytesSent = 0;
  beforeAll(async () => {
    // Sends chunks until the client goes away, declaring no length: only counting can stop it.
    server = createServer((req, res) => {
      bytesSent = 0;
      if (req.url === "/small") {
        res.end("hello");
        return;
      }
      if (req.url === "/slow-event") {
        // One event in three writes far enough apart to be three reads.
        res.writeHead(200, { "content-type": "text/event-stream" });
        const pieces = ['data: {"a"', ":1}", "\n\n"];
        const next = () => {
          res.write(pieces.shift());
          if (pieces.length > 0) setTimeout(next, 30);
          else res.end();
        };
        next();
        return;
      }
      if (req.url === "/declared") {
        res.writeHead(200, { "content-length": String(10 * CAP) });
        res.end("x".repeat(10 * CAP));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(16 * 1024, "a");
      const pump = () => {
        while (!res.destroyed && bytesSent < 1024 * 1024 * 1024) {
          bytesSent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
      };
      res.on("close", () => res.destroy());
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("stops reading an endless body soon after the cap", async () => {
    const capped = capResponseBytes(fetch, CAP);
    const response = await capped(`${url}/endless`);
    const error = await response.text().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(tooLargeIn(error)).toBeInstanceOf(ResponseTooLargeError);
    // The connection was dropped: the server could send little beyond what socket buffers hold.
    await expect.poll(() => bytesSent).toBeGreaterThan(CAP);
    expect(bytesSent).toBeLessThan(512 * CAP);
  });

  it("reads on while the reshaper holds the reads back, until it passes something on", async () => {
    const capped = capResponseBytes(fetch, CAP, () => wholeEvents());
    const reads: string[] = [];
    for await (const read of (await capped(`${url}/slow-event`)).body ?? [])
      reads.push(Buffer.from(read).toString("utf8"));
    expect(reads).toEqual(['data: {"a":1}\n\n']);
  });

  it("hands what it counted to the reshaping transformer, and still stops at the cap", async () => {
    let counted = 0;
    // Passes on nothing but, at the end, how many bytes it was handed.
    const byteCount: Reshaper = {
      transform(chunk) {
        counted += chunk.byteLength;
      },
      flush: (controller) => controller.enqueue(new TextEncoder().encode(String(counted))),
    };
    const capped = capResponseBytes(fetch, CAP, () => byteCount);
    expect(await (await capped(`${url}/small`)).text()).toBe("5");
    counted = 0;
    const error = await (await capped(`${url}/endless`)).text().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(tooLargeIn(error)).toBeInstanceOf(ResponseTooLargeError);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThanOrEqual(CAP);
  });

  it("refuses a declared length over the cap before reading it", async () => {
    const capped = capResponseBytes(fetch, CAP);
    await expect(capped(`${url}/declared`)).rejects.toBeInstanceOf(ResponseTooLargeError);
  });
});
