/**
 * Running a list of independent writes a few at a time, with one rule: work that shares a key (an
 * idempotency key) runs one after another in the order it was taken, so the first of a key is the one
 * that creates and the answer does not depend on which write DynamoDB takes first. POST /tasks/batch
 * (api/batch-enqueue.ts) and the direct client's enqueueMany (client/direct-enqueue-many.ts) use it.
 */

/** Calls `work(i)` for i in 0..count-1 in order, at most `limit` at once. Rejects with the first failure. */
export async function forEachBounded(
  count: number,
  limit: number,
  work: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** Runs work of one key one after another, in the order given; work without a key at once. */
export function keySequencer() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string | undefined, work: () => Promise<T>): Promise<T> => {
    if (key === undefined) return work();
    const mine = (tails.get(key) ?? Promise.resolve()).then(work);
    const tail = mine.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => tails.get(key) === tail && tails.delete(key));
    return mine;
  };
}

/**
 * What orders tasks of one batch, as sent, before they are checked (a task that fails its check writes
 * nothing): its idempotency key, or its type and debounce key. Tasks that share one go one after
 * another in the order sent, so a repeat meets its first, and a debounce burst ends on its last payload.
 */
export function sequenceKeyOf(item: unknown, type: unknown): string | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const { idempotencyKey, debounce } = item as { idempotencyKey?: unknown; debounce?: { key?: unknown } };
  if (typeof idempotencyKey === 'string') return `idempotency\u0000${idempotencyKey}`;
  if (typeof debounce === 'object' && debounce !== null && typeof debounce.key === 'string')
    return `debounce\u0000${String(type)}\u0000${debounce.key}`;
  return undefined;
}
