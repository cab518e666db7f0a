/**
 * Requests to the APIs Koroku calls (the Bot API, Gemini) refuse redirects, which neither sends.
 * A request that may follow one is first copied by Node's fetch (undici clones it, its body stream
 * teed, to send it again): about 0.1 ms of CPU for every request (docs/decisions/0011-cpu-per-turn.md).
 * A redirect then fails the request as a network failure.
 */
export const NO_REDIRECTS = { redirect: "error" } as const satisfies RequestInit;

/** `fetchImpl` with redirects refused (NO_REDIRECTS). */
export const withoutRedirects =
  (fetchImpl: typeof fetch): typeof fetch =>
  (input, init) =>
    fetchImpl(input, { ...init, ...NO_REDIRECTS });
