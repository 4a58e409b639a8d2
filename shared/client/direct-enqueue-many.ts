/**
 * `enqueueMany` as the direct client does it: each task enqueued on its own (its own conditional
 * write, so one bad task fails alone), in batches of MAX_BATCH_TASKS as the HTTP client cuts them (its
 * chunking, by count only: nothing travels as one body), so `onBatch` is called as often either way.
 * A few batches at once, a few tasks of each at once; tasks that share an idempotency key go one after
 * another in the order they are taken (input order within a batch, as POST /tasks/batch takes them),
 * so the first one is the one that creates.
 */
import * as z from 'zod';
import { BATCH_CONCURRENCY } from '../api/batch-enqueue.js';
import { forEachBounded, keySequencer, sequenceKeyOf } from '../bounded-work.js';
import { ValidationError } from '../errors.js';
import type {
  BatchOutcome,
  BatchTask,
  EnqueueManyOptions,
  EnqueueManyResult,
  EnqueueResult,
} from './client-types.js';
import { runBatches } from './batch-runner.js';
import { BATCH_LIMITS, chunksOf } from './batch-chunks.js';
import { clientErrorOf } from './direct-errors.js';
import { ApiProblemError } from './errors.js';

export const DEFAULT_BATCHES_IN_FLIGHT = 2;

const manyOptions = z.object({
  concurrency: z.number().int('must be a whole number').min(1).max(16).optional(),
  keepOutcomes: z.boolean().optional(),
});

const batchTask = z
  .object({
    type: z.string({ error: 'is required: the task type to run' }),
    payload: z.unknown().optional(),
    options: z.looseObject({}).optional(),
  })
  .strict();

type EnqueueOne = (task: BatchTask) => Promise<EnqueueResult>;

export async function enqueueEach(
  tasks: Iterable<BatchTask> | AsyncIterable<BatchTask>,
  options: EnqueueManyOptions,
  enqueueOne: EnqueueOne,
): Promise<EnqueueManyResult> {
  const checked = manyOptions.safeParse({
    concurrency: options.concurrency,
    keepOutcomes: options.keepOutcomes,
  });
  if (!checked.success)
    throw clientErrorOf(
      new ValidationError(
        'enqueueMany',
        checked.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
      ),
    );
  const { concurrency = DEFAULT_BATCHES_IN_FLIGHT, keepOutcomes = true } = checked.data;
  const inKeyOrder = keySequencer();
  let next = 0;
  return runBatches(
    chunksOf(eachOf(tasks), () => 0, BATCH_LIMITS),
    (batch) => {
      const first = next;
      next += batch.length;
      return enqueueBatch(batch, first, (task) => inKeyOrder(keyOf(task), () => enqueueOne(task)));
    },
    {
      concurrency,
      keepOutcomes,
      ...(options.onBatch ? { onBatch: options.onBatch } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
}

/**
 * One batch's outcomes. A task's own problem (its payload, its key, throttling) is its outcome; any
 * other error (access denied, the network) would fail every task alike, so it fails the whole call.
 */
async function enqueueBatch(
  batch: unknown[],
  first: number,
  enqueueOne: EnqueueOne,
): Promise<BatchOutcome[]> {
  const answered = new Array<BatchOutcome>(batch.length);
  await forEachBounded(batch.length, BATCH_CONCURRENCY, async (i) => {
    const index = first + i;
    try {
      const { task, created } = await enqueueOne(checkedTask(batch[i]));
      answered[i] = { index, outcome: created ? 'created' : 'existing', task };
    } catch (error) {
      if (!(error instanceof ApiProblemError)) throw error;
      answered[i] = { index, outcome: 'failed', error };
    }
  });
  return answered;
}

function checkedTask(item: unknown): BatchTask {
  const parsed = batchTask.safeParse(item);
  if (parsed.success) return parsed.data as BatchTask;
  throw clientErrorOf(
    new ValidationError(
      'enqueueMany',
      parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.') || 'task', message: i.message })),
    ),
  );
}

const keyOf = (task: BatchTask) => sequenceKeyOf(task?.options, task?.type);

async function* eachOf<T>(source: Iterable<T> | AsyncIterable<T>): AsyncGenerator<T> {
  for await (const item of source) yield item;
}
