/**
 * A payload kept apart (its own item, body-layout.ts) lives as long as its task can still run. It gets
 * its TTL at enqueue, from the due time; a write that makes the task due later (a retry through the
 * API, a failed attempt's backoff) first moves that TTL as far as the new due time needs, and records it
 * on the task item (`payloadUntil`), so the next such write knows whether it must. Before this, the
 * payload expired on the clock set at enqueue, and a task retried weeks later failed PAYLOAD_MISSING
 * without running (review 2, finding 1).
 */
import type { LeaseholdConfig } from '../config.js';
import { LeaseholdError } from '../errors.js';
import { bodyExpiry, payloadSortKey } from './body-layout.js';
import type { StoreContext } from './context.js';
import { setBodyExpiry } from './task-body.js';
import type { TaskItem } from './task-item.js';

type PayloadRef = Pick<TaskItem, 'id' | 'payloadBytes' | 'payloadUntil' | 'requestHash'>;

/**
 * The TTL (epoch seconds) the payload item must be moved to before the task is made due at
 * `availableAt`, or undefined when it lives long enough already (or the payload is inline). Pure.
 * A task written before `payloadUntil` existed is extended once.
 */
export function payloadExtension(
  task: PayloadRef,
  now: number,
  availableAt: number,
  config: Pick<LeaseholdConfig, 'retentionDays' | 'maxWaitDays'>,
): number | undefined {
  if (task.payloadBytes === undefined) return undefined;
  const needed = bodyExpiry(Math.max(now, availableAt), config);
  return task.payloadUntil !== undefined && task.payloadUntil >= needed ? undefined : needed;
}

/**
 * Moves the payload item's TTL to `until`. Throws PayloadMissingError when the item is gone (its TTL
 * ran out before this fix, or it was never written): the task cannot run again.
 */
export async function extendPayload(
  ctx: StoreContext,
  task: PayloadRef,
  until: number,
  path: 'lease' | 'request',
): Promise<void> {
  if (!(await setBodyExpiry(ctx, task.id, payloadSortKey(task.requestHash), until, path)))
    throw new PayloadMissingError(task.id);
}

/** The task's payload item is gone: running it again would run it without its payload. */
export class PayloadMissingError extends LeaseholdError {
  override name = 'PayloadMissingError';
  override readonly code = 'PAYLOAD_MISSING';
  override readonly status = 409;
  constructor(readonly taskId: string) {
    super(
      `The payload of task ${taskId} is gone (it outlived its retention), so it cannot run again: enqueue a new task with the payload.`,
    );
  }
}
