import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { builtWorkerUrl } from "../threads/worker-url.js";
import type { EncodeJob, EncodeReply } from "./encoder-worker.js";
import type { EncodedVoice } from "./ogg-opus.js";

/** Threads that encode at most: the service's own thread and the database need a core too. */
export const ENCODER_THREADS = Math.max(1, Math.min(availableParallelism() - 1, 4));

/** A voice note could not be encoded (its thread failed or stopped). */
export class EncodingFailedError extends Error {
  constructor(reason: string) {
    super(`encoding it failed: ${reason}`);
    this.name = "EncodingFailedError";
  }
}

export type VoiceEncoder = {
  /** Gemini's PCM (24 kHz mono, 16-bit) as an Ogg Opus voice note, encoded off this thread. */
  encode(pcm: readonly Uint8Array[]): Promise<EncodedVoice>;
  /** Lets the notes under way finish, then ends the threads; encode fails from then on. */
  stop(): Promise<void>;
};

type Thread = {
  worker: Worker;
  pending: Map<number, { resolve(voice: EncodedVoice): void; reject(error: Error): void }>;
};

/**
 * Encodes voice notes on a few threads of their own: on the service's thread ten replies at once
 * queued behind each other's encoding, and every other chat's work behind them (bench/README.md).
 * Threads start with the first note, so a service that never speaks starts none; a thread with
 * nothing to encode does not keep the process alive.
 */
export function createVoiceEncoder(size = ENCODER_THREADS): VoiceEncoder {
  const threads: Thread[] = [];
  const underWay = new Set<Promise<unknown>>();
  let nextId = 1;
  let stopped = false;

  function start(): Thread {
    const worker = new Worker(builtWorkerUrl("./encoder-worker.js", import.meta.url));
    worker.unref();
    const thread: Thread = { worker, pending: new Map() };
    const failAll = (reason: string) => {
      for (const job of thread.pending.values()) job.reject(new EncodingFailedError(reason));
      thread.pending.clear();
      const at = threads.indexOf(thread);
      if (at >= 0) threads.splice(at, 1);
    };
    worker.on("message", (reply: EncodeReply) => {
      const job = thread.pending.get(reply.id);
      thread.pending.delete(reply.id);
      if (thread.pending.size === 0) worker.unref();
      if ("failed" in reply) job?.reject(new EncodingFailedError(reply.failed));
      else job?.resolve({ bytes: Buffer.from(reply.bytes), seconds: reply.seconds });
    });
    worker.on("error", (error) => failAll(`its thread failed: ${error.message}`));
    worker.on("exit", (code) => failAll(`its thread stopped with exit code ${code}`));
    threads.push(thread);
    return thread;
  }

  /** The thread with the least to do, or a new one while there are fewer than `size`. */
  function pick(): Thread {
    const least = threads.reduce<Thread | undefined>(
      (best, t) => (best && best.pending.size <= t.pending.size ? best : t),
      undefined,
    );
    if (least && (least.pending.size === 0 || threads.length >= size)) return least;
    return start();
  }

  return {
    encode(pcm) {
      if (stopped) return Promise.reject(new EncodingFailedError("the service is stopping"));
      // A buffer of its own, handed to the thread without a copy (Node's small buffers share
      // one pool, which must not be handed away).
      const whole = new Uint8Array(pcm.reduce((sum, piece) => sum + piece.byteLength, 0));
      let at = 0;
      for (const piece of pcm) {
        whole.set(piece, at);
        at += piece.byteLength;
      }
      const thread = pick();
      const id = nextId++;
      const encoded = new Promise<EncodedVoice>((resolve, reject) => {
        thread.pending.set(id, { resolve, reject });
      });
      // A note being encoded is work under way, like a turn: the process waits for it.
      thread.worker.ref();
      thread.worker.postMessage({ id, pcm: whole } satisfies EncodeJob, [whole.buffer]);
      const settled: Promise<unknown> = encoded.then(
        () => underWay.delete(settled),
        () => underWay.delete(settled),
      );
      underWay.add(settled);
      return encoded;
    },
    async stop() {
      stopped = true;
      // What this waits for keeps the process alive by itself: a thread is referenced while it
      // has notes to encode, and terminate() holds the process until the thread has ended.
      await Promise.all(underWay);
      await Promise.all(threads.map(({ worker }) => worker.terminate()));
    },
  };
}
