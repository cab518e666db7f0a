import type { Reshaper } from "./response-cap.js";

const LF = 0x0a;
const CR = 0x0d;

/** Whether an event delimiter (`\n\n`, `\r\r` or `\r\n\r\n`) ends at `bytes[i]`. */
function delimiterEndsAt(bytes: Uint8Array, i: number): boolean {
  const byte = bytes[i];
  if (byte !== LF && byte !== CR) return false;
  if (bytes[i - 1] === byte) return true;
  return byte === LF && bytes[i - 1] === CR && bytes[i - 2] === LF && bytes[i - 3] === CR;
}

function concat(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0] as Uint8Array;
  const all = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.byteLength, 0));
  let offset = 0;
  for (const piece of pieces) {
    all.set(piece, offset);
    offset += piece.byteLength;
  }
  return all;
}

/** The last `count` bytes of `pieces` (fewer when they hold fewer). */
function lastBytes(pieces: readonly Uint8Array[], count: number): Uint8Array {
  const tail: Uint8Array[] = [];
  let held = 0;
  for (let i = pieces.length - 1; i >= 0 && held < count; i--) {
    const piece = (pieces[i] as Uint8Array).subarray(-(count - held));
    tail.unshift(piece);
    held += piece.byteLength;
  }
  return concat([new Uint8Array(), ...tail]);
}

/**
 * Hands a server-sent-event body on in whole events only. The Gemini SDK appends each read to a
 * string and searches the whole string for an event's end after every read, so one large event
 * (an image model's picture, or a flood from a broken proxy) arriving in many reads costs time
 * quadratic in its size, on the event loop every chat shares. Handed whole events, the SDK finds
 * each end at once; here each byte is looked at once and copied at most twice.
 */
export function wholeEvents(): Reshaper {
  /** Bytes after the last whole event handed on, in the pieces they came in. */
  let pending: Uint8Array[] = [];
  return {
    transform(chunk, controller) {
      // A delimiter can start in the bytes before this read: the last three are looked at again.
      const before = lastBytes(pending, 3);
      const window = before.byteLength === 0 ? chunk : concat([before, chunk]);
      let end = -1;
      for (let i = window.length - 1; i >= before.length && end === -1; i--) {
        if (delimiterEndsAt(window, i)) end = i + 1 - before.length;
      }
      if (end === -1) {
        pending.push(chunk);
        return;
      }
      controller.enqueue(concat([...pending, chunk.subarray(0, end)]));
      pending = end < chunk.byteLength ? [chunk.subarray(end)] : [];
    },
    flush(controller) {
      if (pending.length > 0) controller.enqueue(concat(pending));
    },
  };
}

/** Server-sent-event responses in whole events (see wholeEvents); others as they come. */
export const sseInWholeEvents = (response: Response) =>
  (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? wholeEvents()
    : undefined;
