/**
 * `work`'s result, or undefined as soon as `stop` aborts (at once if it already has). What `work`
 * does goes on unwatched, and a failure of it after the stop is nobody's: an upload the SDK cannot
 * abort, a backoff's sleep.
 */
export async function unlessStopped<T>(
  work: Promise<T>,
  stop: AbortSignal | undefined,
): Promise<T | undefined> {
  if (stop === undefined) return work;
  work.catch(() => {});
  let onStop = () => {};
  const stopped = new Promise<undefined>((resolve) => {
    onStop = () => resolve(undefined);
    if (stop.aborted) onStop();
    else stop.addEventListener("abort", onStop, { once: true });
  });
  try {
    return await Promise.race([work, stopped]);
  } finally {
    stop.removeEventListener("abort", onStop);
  }
}
