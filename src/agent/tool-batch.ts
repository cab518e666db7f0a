/**
 * Runs `run` for every item concurrently and returns the results in the items' order. Items that
 * share a key run at most `limitOf(key)` at a time (undefined: no limit), started in their order:
 * a tool that changes state can ask for one at a time, so two writes to one file keep the order
 * the model gave them.
 */
export async function runInOrder<T, R>(
  items: readonly T[],
  keyOf: (item: T) => string,
  limitOf: (key: string) => number | undefined,
  run: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  const queues = new Map<string, number[]>();
  items.forEach((item, index) => {
    const key = keyOf(item);
    queues.set(key, [...(queues.get(key) ?? []), index]);
  });
  const workers: Promise<void>[] = [];
  for (const [key, queue] of queues) {
    const worker = async () => {
      for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
        results[index] = await run(items[index] as T);
      }
    };
    const limit = Math.min(limitOf(key) ?? queue.length, queue.length);
    for (let i = 0; i < limit; i++) workers.push(worker());
  }
  await Promise.all(workers);
  return results;
}
