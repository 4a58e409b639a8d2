/**
 * POST /tasks/batch: up to MAX_BATCH_TASKS tasks, each checked, enqueued and answered on its own, as
 * POST /tasks would answer it (created, existing under its idempotency key, or its problem). Each task
 * is its own conditional write, so a task is either wholly enqueued or not at all, whatever happens
 * to the others; the answer lists every task in the order sent.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { LeaseholdConfig } from '../config.js';
import type { TaskSubmitter } from '../tasks/task-submitter.js';
import { forEachBounded, keySequencer, sequenceKeyOf } from '../bounded-work.js';
import { enqueueRequest } from './enqueue-request.js';
import { errorResponse } from './error-response.js';
import type { BatchAnswer, BatchItemResult, Problem, TaskJson } from './response-schemas.js';
import { taskJson } from './task-json.js';

/**
 * Tasks of one batch enqueued at once. Enough to hide DynamoDB's round trip (a batch of 100 takes
 * about 100 / 16 round trips), few enough that one batch does not crowd out other requests of the
 * same execution environment or burst one partition.
 */
export const BATCH_CONCURRENCY = 16;

export interface BatchEnqueueDeps {
  submitter: Pick<TaskSubmitter, 'enqueue'>;
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>;
  logger: Logger;
}

/** Enqueues `items` (the envelope's `tasks`, each unchecked) for `owner`; never throws for one item's sake. */
export async function enqueueBatch(
  items: readonly unknown[],
  owner: string,
  deps: BatchEnqueueDeps,
): Promise<BatchAnswer> {
  const results: BatchItemResult[] = new Array<BatchItemResult>(items.length);
  // Tasks that share an idempotency or debounce key go one after another, in the order sent (bounded-work.ts).
  const inKeyOrder = keySequencer();
  await forEachBounded(items.length, BATCH_CONCURRENCY, async (index) => {
    const item = items[index] as { type?: unknown } | undefined;
    results[index] = await inKeyOrder(sequenceKeyOf(item, item?.type), () =>
      enqueueItem(index, items[index], owner, deps),
    );
  });
  return {
    results,
    created: results.filter((r) => r.outcome === 'created').length,
    existing: results.filter((r) => r.outcome === 'existing').length,
    failed: results.filter((r) => r.outcome === 'failed').length,
  };
}

/** One task's answer: what POST /tasks answers for the same body, with its index. */
async function enqueueItem(
  index: number,
  item: unknown,
  owner: string,
  deps: BatchEnqueueDeps,
): Promise<BatchItemResult> {
  try {
    const { task, created } = await deps.submitter.enqueue(enqueueRequest(item, owner, deps.config));
    const json = taskJson(task) as TaskJson;
    return created
      ? { index, outcome: 'created', status: 201, task: json }
      : { index, outcome: 'existing', status: 200, task: json };
  } catch (error) {
    // The API's own mapping: the same code, status and detail as POST /tasks (throttling 503, the unexpected 500 and logged).
    const response = errorResponse(error, deps.logger);
    return {
      index,
      outcome: 'failed',
      status: response.statusCode,
      problem: JSON.parse(response.body) as Problem,
    };
  }
}
