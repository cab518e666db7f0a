import { describe, expect, it } from "vitest";
import { transformBody, withBodyStep } from "../../src/agent/body-transform.js";

const bytes = (...values: number[]) => new Uint8Array(values);

/** A body of these reads that remembers whether, and why, it was cancelled. */
function source(reads: readonly Uint8Array[]) {
  const state = { cancelled: false as boolean, reason: undefined as unknown, pulls: 0 };
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulls++;
      const read = reads[next++];
      if (read === undefined) controller.close();
      else controller.enqueue(read);
    },
    cancel(reason) {
      state.cancelled = true;
      state.reason = reason;
    },
  });
  return { body, state };
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<number[][]> {
  const reads: number[][] = [];
  for await (const read of body) reads.push([...read]);
  return reads;
}

describe("a response body through a step", () => {
  it("hands on what the step hands on, in order, then what it leaves at the end", async () => {
    const { body } = source([bytes(1, 2), bytes(3), bytes(4, 5)]);
    const held: number[] = [];
    const out = transformBody(body, {
      // Holds odd reads back and hands them on with the next even one.
      transform(chunk, enqueue) {
        held.push(...chunk);
        if (held.length % 2 === 0) enqueue(new Uint8Array(held.splice(0)));
      },
      flush(enqueue) {
        if (held.length > 0) enqueue(new Uint8Array(held.splice(0)));
      },
    });
    expect(await readAll(out)).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
  });

  it("reads on while the step hands nothing on, and ends with the source", async () => {
    const { body, state } = source([bytes(1), bytes(2), bytes(3)]);
    const out = transformBody(body, { transform() {} });
    expect(await readAll(out)).toEqual([]);
    expect(state.pulls).toBe(4);
  });

  it("fails with the step's error and cancels the source", async () => {
    const { body, state } = source([bytes(1), bytes(2), bytes(3)]);
    const refused = new Error("too much");
    const out = transformBody(body, {
      transform(chunk, enqueue) {
        if (chunk[0] === 2) throw refused;
        enqueue(chunk);
      },
    });
    const reader = out.getReader();
    expect((await reader.read()).value).toEqual(bytes(1));
    await expect(reader.read()).rejects.toBe(refused);
    expect(state).toMatchObject({ cancelled: true, reason: refused });
  });

  it("cancels the source when its reader cancels", async () => {
    const { body, state } = source([bytes(1), bytes(2)]);
    const out = transformBody(body, { transform: (chunk, enqueue) => enqueue(chunk) });
    await out.cancel("enough");
    expect(state).toMatchObject({ cancelled: true, reason: "enough" });
  });

  it("hands nothing more on, flushing nothing, once its reader cancelled during a read", async () => {
    let cancelled = false;
    const waiting = new ReadableStream<Uint8Array>({
      pull: () => new Promise<void>(() => {}),
      cancel() {
        cancelled = true;
      },
    });
    let flushed = false;
    const out = transformBody(waiting, {
      transform: (chunk, enqueue) => enqueue(chunk),
      flush() {
        flushed = true;
      },
    });
    const reader = out.getReader();
    const read = reader.read();
    await reader.cancel("stop");
    expect(await read).toEqual({ done: true, value: undefined });
    expect({ cancelled, flushed }).toEqual({ cancelled: true, flushed: false });
  });

  it("keeps a response's status and headers, and leaves a response without a body as it is", async () => {
    const { body } = source([bytes(104, 105)]);
    const response = new Response(body, {
      status: 201,
      statusText: "Made",
      headers: { "content-type": "text/event-stream" },
    });
    const stepped = withBodyStep(response, { transform: (chunk, enqueue) => enqueue(chunk) });
    expect(stepped).not.toBe(response);
    expect([stepped.status, stepped.statusText, stepped.headers.get("content-type")]).toEqual([
      201,
      "Made",
      "text/event-stream",
    ]);
    expect(await stepped.text()).toBe("hi");
    const empty = new Response(null, { status: 204 });
    expect(withBodyStep(empty, { transform() {} })).toBe(empty);
  });
});
