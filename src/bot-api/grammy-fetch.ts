import type { ApiClientOptions } from "grammy";
import { NO_REDIRECTS } from "../http/no-redirects.js";

type GrammyFetch = NonNullable<ApiClientOptions["fetch"]>;

/** What grammY's signals have of an AbortSignal. */
type SignalLike = Pick<AbortSignal, "aborted" | "reason" | "addEventListener">;

/** The signal as one of Node's own: a new one that aborts with it, unless it already is. */
function nativeSignal(signal: SignalLike): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  return controller.signal;
}

/**
 * Node's own fetch (undici) for grammY, in place of its default node-fetch, like the Gemini SDK's:
 * one HTTP stack for both. grammY's Node build aborts its requests through the abort-controller
 * package, whose signal is not Node's AbortSignal; Node 20's fetch took any signal that looked like
 * one, Node 22's and 24's refuse it ("Expected signal to be an instance of AbortSignal"), so every
 * call would fail. grammY creates a signal per call, so the listener goes with it. The Bot API sends
 * no redirects: they are refused (src/http/no-redirects.ts).
 */
export const grammyFetch = ((input: string | URL | Request, init?: RequestInit) =>
  fetch(input, {
    ...init,
    ...(init?.signal ? { signal: nativeSignal(init.signal) } : {}),
    ...NO_REDIRECTS,
  })) as unknown as GrammyFetch;
