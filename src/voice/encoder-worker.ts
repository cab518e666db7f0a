import { parentPort } from "node:worker_threads";
import { OggOpusEncoder } from "./ogg-opus.js";

/** A voice note to encode: the whole of its PCM (24 kHz mono, 16-bit), its buffer handed over. */
export type EncodeJob = { id: number; pcm: Uint8Array };

/** The encoded note, or why it could not be made. */
export type EncodeReply =
  | { id: number; bytes: Uint8Array; seconds: number }
  | { id: number; failed: string };

/**
 * An encoding thread (src/voice/encoder-pool.ts): libopus in WebAssembly spends about 15–20 ms of
 * CPU per second of speech, which here holds up no other chat's work.
 */
function encodeJobs(port: NonNullable<typeof parentPort>): void {
  port.on("message", (job: EncodeJob) => {
    const encoder = new OggOpusEncoder();
    try {
      encoder.write(job.pcm);
      const { bytes, seconds } = encoder.finish();
      port.postMessage({ id: job.id, bytes, seconds } satisfies EncodeReply);
    } catch (error) {
      encoder.discard();
      const failed = error instanceof Error ? error.message : String(error);
      port.postMessage({ id: job.id, failed } satisfies EncodeReply);
    }
  });
}

if (parentPort) encodeJobs(parentPort);
