/**
 * Enqueue: one conditional put (two when the payload has its own item, written first). An idempotency
 * key makes the id deterministic, so a retry meets its own first write; with a payload kept apart, the
 * task is read first, so a repeat writes nothing and a refused one no payload.
 */
import { IdempotencyConflictError, LeaseholdError } from '../errors.js';
import { idempotentTaskId } from '../ids.js';
import { taskKey } from '../table-layout.js';
import type { Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalPut } from './conditional-write.js';
import { enqueueInput, parseInput, type EnqueueInput } from '../task-inputs.js';
import { expireBody } from './task-body.js';
import { readTaskItem } from './task-reads.js';
import { isExpired, toTask, type TaskItem } from './task-item.js';
import { conditionOf, enqueued } from './transitions.js';
import { newTask, putNewTask, type EnqueueResult } from './new-task.js';
import { enqueueDebounced } from './debounce.js';

export type { EnqueueResult } from './new-task.js';

export async function enqueue(ctx: StoreContext, rawInput: EnqueueInput): Promise<EnqueueResult> {
  const input = parseInput(enqueueInput, 'enqueue', rawInput);
  if (input.debounce) return enqueueDebounced(ctx, input, input.debounce);
  const now = ctx.clock.now();
  const id = input.idempotencyKey ? idempotentTaskId(input.owner, input.idempotencyKey) : ctx.newId();
  const built = newTask(ctx, input, id, now);
  const { payloadItem, payloadText, requestHash } = built;
  // A repeated key with a payload kept apart: the task already there answers it, before a payload item
  // (up to 256 KB) is written that its put would then refuse.
  if (payloadItem && input.idempotencyKey) {
    const earlier = await readTaskItem(ctx, id);
    if (earlier && !isExpired(earlier, now)) {
      if (earlier.requestHash !== requestHash)
        throw new IdempotencyConflictError(input.idempotencyKey, toTask(earlier));
      return { task: toTask(earlier, { ...earlier, payload: payloadText }), created: false };
    }
  }
  const { item, put } = await putNewTask(ctx, built, { needCurrent: true });
  const key = taskKey(id);
  // The task as this request wrote it, or as an earlier request of the same fingerprint (so the same payload) did.
  const shown = (i: TaskItem) => toTask(i, { ...i, payload: payloadText });
  if (put.applied) return { task: shown(put.item), created: true };
  const existing = put.current;
  // Refused, yet nothing there: deleted (by TTL) between the put and the read. The caller may retry.
  if (!existing) throw new EnqueueRaceError(id);
  if (!input.idempotencyKey) throw new EnqueueRaceError(id);
  if (isExpired(existing, now)) return replaceExpired(ctx, key, item, existing, now, shown);
  if (existing.requestHash !== requestHash) {
    // Another request of the key won the race since the read above: the payload item written for
    // this one (keyed by its own fingerprint) is named by no task. Marked for TTL, not left 60 days.
    if (payloadItem) await expireBody(ctx, id, payloadItem.key);
    throw new IdempotencyConflictError(input.idempotencyKey, toTask(existing));
  }
  return { task: shown(existing), created: false };
}

/**
 * The key's earlier task is past its retention: the idempotency window is over, so this is a new
 * task. It replaces the old record (as if TTL had deleted it) and carries its token forward.
 */
async function replaceExpired(
  ctx: StoreContext,
  key: Record<string, string>,
  item: TaskItem,
  existing: TaskItem,
  now: number,
  shown: (i: TaskItem) => Task,
): Promise<EnqueueResult> {
  const fresh = { ...item, leaseToken: Math.max(item.leaseToken, existing.leaseToken) };
  const put = await conditionalPut<TaskItem>(
    writeTargetOf(ctx, 'request'),
    key,
    fresh,
    conditionOf(enqueued(fresh, now, existing)),
    { needCurrent: true },
  );
  if (put.applied) return { task: shown(put.item), created: true };
  // Another enqueue of the same key replaced it first: that one is the task now.
  if (put.current && put.current.requestHash === item.requestHash)
    return { task: shown(put.current), created: false };
  throw new EnqueueRaceError(item.id);
}

/** The put was refused by an item this enqueue cannot account for; retrying the request is safe. */
export class EnqueueRaceError extends LeaseholdError {
  override name = 'EnqueueRaceError';
  override readonly code = 'ENQUEUE_RACE';
  /** A race with a concurrent request: sent again, it settles. */
  override readonly status = 409;
  constructor(readonly taskId: string) {
    super(`Task ${taskId} changed while it was being enqueued; send the request again.`);
  }
}
