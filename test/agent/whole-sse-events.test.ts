import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sseInWholeEvents, wholeEvents } from "../../src/agent/whole-sse-events.js";

const encoder = new TextEncoder();

const inWholeEvents = (body: ReadableStream<Uint8Array>) =>
  body.pipeThrough(new TransformStream(wholeEvents()));

/** A body that arrives in exactly these reads. */
function bodyOf(reads: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const read of reads) controller.enqueue(read);
      controller.close();
    },
  });
}

async function readsOf(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const reads: Uint8Array[] = [];
  for await (const read of body) reads.push(read);
  return reads;
}

/** Splits `bytes` at the given offsets (sorted, deduplicated, inside the bytes). */
function splitAt(bytes: Uint8Array, offsets: readonly number[]): Uint8Array[] {
  const cuts = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const reads: Uint8Array[] = [];
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut > start) reads.push(bytes.slice(start, cut));
    start = Math.max(start, cut);
  }
  return reads;
}

const DELIMITERS = ["\n\n", "\r\r", "\r\n\r\n"] as const;
const text = (reads: readonly Uint8Array[]) => Buffer.concat(reads).toString("utf8");

describe("a server-sent-event body handed on in whole events", () => {
  it("ends every read but the last at an event's end, and changes no byte", async () => {
    const event = fc
      .tuple(
        fc.string({ unit: fc.constantFrom("a", "é", "{", "}", ":", "日") }),
        fc.constantFrom(...DELIMITERS),
      )
      .map(([body, end]) => `data: ${body}${end}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 1, maxLength: 8 }),
        fc.string({ unit: fc.constantFrom("data: x", "y", "\r", "\n") }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (events, unfinished, offsets) => {
          const all = encoder.encode(events.join("") + unfinished);
          const reads = await readsOf(inWholeEvents(bodyOf(splitAt(all, offsets))));
          expect(text(reads)).toBe(text([all]));
          for (const read of reads.slice(0, -1)) {
            const ending = Buffer.from(read).toString("utf8");
            expect(DELIMITERS.some((d) => ending.endsWith(d))).toBe(true);
          }
        },
      ),
    );
  });

  it("hands on a large event that came in many reads as one read", async () => {
    const event = encoder.encode(`data: {"text":"${"x".repeat(4 * 1024 * 1024)}"}\n\n`);
    const reads = await readsOf(inWholeEvents(bodyOf(splitAt(event, range(64 * 1024, event)))));
    expect(reads).toHaveLength(1);
    expect(reads[0]?.byteLength).toBe(event.byteLength);
  });

  it("finds a delimiter split between two reads", async () => {
    const reads = await readsOf(
      inWholeEvents(bodyOf([encoder.encode("data: 1\r\n"), encoder.encode("\r\ndata: 2")])),
    );
    expect(reads.map((r) => Buffer.from(r).toString("utf8"))).toEqual([
      "data: 1\r\n\r\n",
      "data: 2",
    ]);
  });
});

/** Offsets every `step` bytes through `bytes`. */
function range(step: number, bytes: Uint8Array): number[] {
  return Array.from({ length: Math.floor(bytes.length / step) }, (_, i) => (i + 1) * step);
}

describe("which Gemini responses go in whole events", () => {
  const typed = (type: string) => new Response("", { headers: { "content-type": type } });

  it("server-sent events, and nothing else", () => {
    expect(sseInWholeEvents(typed("text/event-stream"))).toBeDefined();
    expect(sseInWholeEvents(typed("text/event-stream; charset=utf-8"))).toBeDefined();
    expect(sseInWholeEvents(typed("application/json; charset=UTF-8"))).toBeUndefined();
    expect(sseInWholeEvents(new Response(null))).toBeUndefined();
  });
});
