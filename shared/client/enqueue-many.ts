/**
 * `enqueueMany`: a stream of tasks of any length through POST /tasks/batch, a few batches in flight.
 * Each task gets its idempotency key once, before its first batch, so a batch sent again (a lost
 * answer) or a task sent again (throttled on its own, 503 in its result) cannot enqueue it twice. A
 * task the API refuses is a `failed` outcome with its error; the others go on. A batch refused as a
 * whole (access denied, the API unreachable after the retries) ends the call with that error: the
 * batches answered before it were reported through `onBatch`.
 */
import { batchAnswerSchema, type Problem } from '../api/response-schemas.js';
import type { IdGenerator, RandomSource } from '../ids.js';
import { clientTask, decodeAnswer } from './answers.js';
import { batchBytesOf, BATCH_LIMITS, chunksOf, maxTaskBytes, type ChunkLimits } from './batch-chunks.js';
import type { BatchOutcome, BatchTask, EnqueueManyOptions, EnqueueManyResult } from './client-types.js';
import { runBatches } from './batch-runner.js';
import { enqueueBodyOf, type PreparedEnqueue } from './enqueue-body.js';
import { BadRequestError, problemError, UnexpectedAnswerError } from './errors.js';
import type { Sleep, Transport } from './http-transport.js';
import { createdByThisCall } from './lost-answers.js';
import { decideRetry, isRetryableStatus, type RetryPolicy } from './retry-policy.js';

const ROUTE = 'POST /tasks/batch';
const DEFAULT_CONCURRENCY = 2;

export interface EnqueueManyDeps {
  transport: Transport;
  newKey: IdGenerator;
  retry: RetryPolicy;
  random: RandomSource;
  sleep: Sleep;
  limits?: ChunkLimits;
}

/** One task on its way: its body and size, or the error that keeps it from being sent. */
interface Item {
  index: number;
  prepared?: PreparedEnqueue;
  bytes: number;
  error?: Error;
  /** A batch it was in lost its answer: the task may exist already (under its key). */
  mayHaveLanded: boolean;
}

export async function enqueueMany(
  tasks: Iterable<BatchTask> | AsyncIterable<BatchTask>,
  options: EnqueueManyOptions,
  deps: EnqueueManyDeps,
): Promise<EnqueueManyResult> {
  const limits = deps.limits ?? BATCH_LIMITS;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
  const chunks = chunksOf(prepared(tasks, deps.newKey, limits), (item) => item.bytes, limits);
  return runBatches(chunks, (chunk) => sendChunk(chunk, options.signal, deps), {
    concurrency,
    keepOutcomes: options.keepOutcomes ?? true,
    ...(options.onBatch ? { onBatch: options.onBatch } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

async function* prepared(
  tasks: Iterable<BatchTask> | AsyncIterable<BatchTask>,
  newKey: IdGenerator,
  limits: ChunkLimits,
): AsyncGenerator<Item> {
  let index = 0;
  for await (const task of tasks) yield prepare(task, index++, newKey, limits);
}

function prepare(task: BatchTask, index: number, newKey: IdGenerator, limits: ChunkLimits): Item {
  let prepared: PreparedEnqueue;
  let json: string;
  try {
    prepared = enqueueBodyOf(task.type, task.payload, task.options, newKey);
    json = JSON.stringify(prepared.body);
  } catch (error) {
    // A payload JSON cannot hold (a BigInt, a cycle): this task fails, the others go on.
    return { index, bytes: 0, error: error as Error, mayHaveLanded: false };
  }
  const bytes = batchBytesOf(json);
  if (bytes > maxTaskBytes(limits)) {
    const detail = `The task is ${bytes} bytes as JSON; a request body may hold at most ${limits.maxBytes}. Keep large data elsewhere (e.g. S3) and pass a reference.`;
    const problem: Problem = {
      type: 'about:blank',
      title: 'Content Too Large',
      status: 413,
      code: 'BODY_TOO_LARGE',
      detail,
    };
    return { index, bytes: 0, error: new BadRequestError(413, problem), mayHaveLanded: false };
  }
  return { index, prepared, bytes, mayHaveLanded: false };
}

/** Sends one chunk, then again its tasks throttled on their own, until each has its outcome. */
async function sendChunk(
  chunk: Item[],
  signal: AbortSignal | undefined,
  deps: EnqueueManyDeps,
): Promise<BatchOutcome[]> {
  const outcomes: BatchOutcome[] = [];
  for (const item of chunk)
    if (item.error) outcomes.push({ index: item.index, outcome: 'failed', error: item.error });
  let pending = chunk.filter((item) => !item.error);
  for (let round = 1; pending.length > 0; round++) {
    const answer = await deps.transport({
      method: 'POST',
      route: ROUTE,
      path: 'tasks/batch',
      body: { tasks: pending.map((item) => item.prepared!.body) },
      signal,
    });
    const { results } = decodeAnswer(answer, batchAnswerSchema, ROUTE);
    if (results.length !== pending.length)
      throw new UnexpectedAnswerError(ROUTE, answer.status, [
        `${results.length} results for ${pending.length} tasks`,
      ]);
    if (answer.earlierAttemptMayHaveLanded) for (const item of pending) item.mayHaveLanded = true;
    const throttled: { item: Item; status: number; problem: Problem }[] = [];
    for (const result of results) {
      const item = pending[result.index];
      if (!item)
        throw new UnexpectedAnswerError(ROUTE, answer.status, [
          `a result for task ${result.index} of ${pending.length}`,
        ]);
      if (result.outcome === 'failed') {
        if (isRetryableStatus(result.status))
          throttled.push({ item, status: result.status, problem: result.problem });
        else
          outcomes.push({
            index: item.index,
            outcome: 'failed',
            error: problemError(result.status, result.problem),
          });
        continue;
      }
      const created = createdByThisCall(result.outcome, item.prepared!.keyMadeByClient, item.mayHaveLanded);
      outcomes.push({
        index: item.index,
        outcome: created ? 'created' : 'existing',
        task: clientTask(result.task),
      });
    }
    pending = throttled.map((t) => t.item);
    if (pending.length === 0) break;
    const decision = decideRetry(
      round,
      { kind: 'answer', status: throttled[0]!.status },
      deps.retry,
      deps.random,
    );
    if (!decision.retry) {
      for (const t of throttled)
        outcomes.push({ index: t.item.index, outcome: 'failed', error: problemError(t.status, t.problem) });
      break;
    }
    await deps.sleep(decision.delayMs, signal);
  }
  return outcomes;
}
