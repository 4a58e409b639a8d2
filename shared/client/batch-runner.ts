/**
 * What `enqueueMany` does the same over HTTP (enqueue-many.ts) and direct (direct-enqueue-many.ts):
 * batches sent a few at a time, the input read no faster than batches may start, totals kept, each
 * batch reported through `onBatch` in index order. A batch that throws (a failure of the whole call,
 * not of one task) ends the call with that error once the batches in flight have settled.
 */
import type { BatchOutcome, BatchTotals, EnqueueManyOptions, EnqueueManyResult } from './client-types.js';

export async function runBatches<T>(
  batches: AsyncIterable<T[]>,
  send: (batch: T[]) => Promise<BatchOutcome[]>,
  options: Pick<EnqueueManyOptions, 'onBatch' | 'signal'> & { concurrency: number; keepOutcomes: boolean },
): Promise<EnqueueManyResult> {
  const totals: BatchTotals = { created: 0, existing: 0, failed: 0 };
  const kept: BatchOutcome[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const report = (outcomes: BatchOutcome[]) => {
    outcomes.sort((a, b) => a.index - b.index);
    for (const o of outcomes) totals[o.outcome]++;
    if (options.keepOutcomes) kept.push(...outcomes);
    options.onBatch?.(outcomes, { ...totals });
  };
  try {
    for await (const batch of batches) {
      if (options.signal?.aborted) failure ??= { error: options.signal.reason };
      if (failure) break;
      const job: Promise<void> = send(batch)
        .then(report)
        .catch((error: unknown) => void (failure ??= { error }))
        .finally(() => inFlight.delete(job));
      inFlight.add(job);
      // Read on only when a batch may start: the input is pulled no faster than batches are answered.
      while (inFlight.size >= options.concurrency && !failure) await Promise.race(inFlight);
    }
  } finally {
    await Promise.all(inFlight);
  }
  if (!failure && options.signal?.aborted) failure = { error: options.signal.reason };
  if (failure) throw failure.error;
  return { ...totals, outcomes: kept.sort((a, b) => a.index - b.index) };
}
