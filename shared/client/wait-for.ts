/**
 * `waitFor`: reads the task until it has finished, at first every `interval` (250 ms) and then less
 * often, up to every 5 s, so a long task costs few reads and a short one is seen soon after it ends.
 */
import type { Clock } from '../clock.js';
import { isTerminal } from '../task-model.js';
import type { ClientTask, FinishedTask, TaskId, WaitOptions } from './client-types.js';
import { WaitTimeoutError } from './errors.js';
import type { Sleep } from './http-transport.js';

export const FIRST_INTERVAL_MS = 250;
export const MAX_INTERVAL_MS = 5_000;
/** Each wait this much longer than the one before. */
const GROWTH = 1.5;

export function isFinished<P, R>(task: ClientTask<P, R>): task is FinishedTask<P, R> {
  return isTerminal(task.status);
}

/** The wait after `interval`: longer by GROWTH, at most MAX_INTERVAL_MS (or `interval` if it is longer). */
export function nextInterval(interval: number): number {
  return Math.max(interval, Math.min(MAX_INTERVAL_MS, Math.round(interval * GROWTH)));
}

export async function waitForTask<P, R>(
  id: TaskId<P, R>,
  read: (signal: AbortSignal | undefined) => Promise<ClientTask<P, R>>,
  options: WaitOptions,
  deps: { sleep: Sleep; clock: Clock },
): Promise<FinishedTask<P, R>> {
  const { signal, timeout } = options;
  const deadline = timeout === undefined ? Number.POSITIVE_INFINITY : deps.clock.now() + timeout;
  let interval = Math.max(1, options.interval ?? FIRST_INTERVAL_MS);
  for (;;) {
    signal?.throwIfAborted();
    const task = await read(signal);
    if (isFinished(task)) return task;
    const left = deadline - deps.clock.now();
    if (left <= 0) throw new WaitTimeoutError(id, task, timeout!);
    await deps.sleep(Math.min(interval, left), signal);
    interval = nextInterval(interval);
  }
}
