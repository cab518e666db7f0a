import { writeFileSync } from "node:fs";

/**
 * What V8's sampling heap profiler keeps: every byte allocated (`allocated`, young garbage
 * included), or only what outlived the young generation (`promoted`: what the old generation's
 * marking then has to go through, docs/decisions/0011-cpu-per-turn.md).
 */
export type HeapProfileKind = "allocated" | "promoted";

export function parseHeapProfileKind(value: string | undefined): HeapProfileKind {
  const kind = value?.trim() || "allocated";
  if (kind !== "allocated" && kind !== "promoted") {
    throw new Error(`BENCH_HEAP_PROFILE takes allocated or promoted, not "${kind}"`);
  }
  return kind;
}

/** Node options that open the inspector, on loopback only, for startHeapProfile. */
export const inspectorArgs = (port: number): string[] => [`--inspect=127.0.0.1:${port}`];

type Reply = { id?: number; result?: unknown; error?: { message: string } };

/**
 * Starts V8's sampling heap profiler in the process whose inspector listens on `port`; `stop`
 * writes what it sampled to `file`, a .heapprofile that Chrome's DevTools open and
 * bench/heap-summary.ts reads.
 */
export async function startHeapProfile(
  port: number,
  kind: HeapProfileKind,
): Promise<{ stop(file: string): Promise<void> }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const target = targets[0];
  if (!target) throw new Error(`no inspector target on port ${port}`);
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error("could not reach the inspector")), {
      once: true,
    });
  });
  const waiting = new Map<number, { resolve(result: unknown): void; reject(error: Error): void }>();
  socket.addEventListener("message", (event) => {
    const reply = JSON.parse(String(event.data)) as Reply;
    if (reply.id === undefined) return;
    const caller = waiting.get(reply.id);
    waiting.delete(reply.id);
    if (reply.error) caller?.reject(new Error(`inspector: ${reply.error.message}`));
    else caller?.resolve(reply.result);
  });
  let lastId = 0;
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++lastId;
      waiting.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  await call("HeapProfiler.enable");
  await call("HeapProfiler.startSampling", {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: kind === "allocated",
  });
  return {
    async stop(file) {
      const { profile } = (await call("HeapProfiler.stopSampling")) as { profile: unknown };
      writeFileSync(file, JSON.stringify(profile));
      socket.close();
    },
  };
}
