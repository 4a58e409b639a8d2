/**
 * Enqueue: one conditional put (two when the payload has its own item, written first). An idempotency
 * key makes the id deterministic, so a retry meets its own first write; with a payload kept apart, the
 * task is read first, so a repeat writes nothing and a refused one no payload.
 */
import { IdempotencyConflictError, LeaseholdError } from '../errors.js';
import { idempotentTaskId, requestFingerprint } from '../ids.js';
import { shardForId, taskKey } from '../table-layout.js';
import type { Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalPut } from './conditional-write.js';
import { enqueueInput, parseInput, type EnqueueInput } from '../task-inputs.js';
import { bodyExpiry, fitsInline, payloadSortKey } from './body-layout.js';
import { expireBody, putBody } from './task-body.js';
import { readTaskItem } from './task-reads.js';
import { CostCount, countCost } from './cost-meter.js';
import { withPutCost } from './recorded-cost.js';
import { toTask, type TaskItem } from './task-item.js';
import { applyTransition, conditionOf, enqueued } from './transitions.js';
import { rotationForTask } from '../group-rules.js';

export interface EnqueueResult {
  task: Task;
  /** False when an idempotency key matched an earlier enqueue and that task was returned. */
  created: boolean;
}

export async function enqueue(ctx: StoreContext, rawInput: EnqueueInput): Promise<EnqueueResult> {
  const input = parseInput(enqueueInput, 'enqueue', rawInput);
  const now = ctx.clock.now();
  const id = input.idempotencyKey ? idempotentTaskId(input.owner, input.idempotencyKey) : ctx.newId();
  const availableAt = input.availableAt ?? now + (input.delayMs ?? 0);
  const payloadText = JSON.stringify(input.payload ?? null);
  const requestHash = requestFingerprint({
    type: input.type,
    payload: input.payload ?? null,
    priority: input.priority,
    availableAt: input.availableAt,
    delayMs: input.delayMs,
    maxAttempts: input.maxAttempts,
    timeoutMs: input.timeoutMs,
    ...(input.group === undefined ? {} : { group: input.group }),
  });
  const shard = shardForId(id);
  // A grouped task, or any task of a type with fair shares, waits in a rotation (group-rules.ts).
  const rotation = rotationForTask(ctx.typeGrouping, {
    type: input.type,
    owner: input.owner,
    group: input.group,
  });
  const record: Omit<TaskItem, 'status' | 'ownerPk' | 'ownerSk'> = {
    ...(taskKey(id) as { pk: string; sk: string }),
    id,
    type: input.type,
    priority: input.priority,
    // A payload too large for the task item is written first, into its own item (task-body.ts).
    ...(fitsInline(payloadText)
      ? { payload: payloadText }
      : {
          payloadBytes: Buffer.byteLength(payloadText),
          // The payload item's TTL, so a later write that makes the task due later knows to move it.
          payloadUntil: bodyExpiry(Math.max(now, availableAt), ctx.config),
        }),
    owner: input.owner,
    shard,
    ...(rotation === undefined ? {} : { rotation }),
    ...(input.group === undefined ? {} : { group: input.group }),
    attempts: 0,
    maxAttempts: input.maxAttempts ?? ctx.config.defaultMaxAttempts,
    createdAt: now,
    updatedAt: now,
    availableAt,
    // Fencing tokens of a task id only ever grow. A random id is never reused; an idempotent one comes
    // back when its key is used again after the record expired, so its tokens start from the clock,
    // above every token the earlier record can have handed out (one per claim).
    leaseToken: input.idempotencyKey === undefined ? 0 : now,
    writeId: '',
    ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey, requestHash }),
  };
  // Status, owner keys, and the ready index when due or the delay index until promoted.
  const placed = enqueued(record, now);
  const payloadItem =
    record.payloadBytes === undefined
      ? undefined
      : {
          key: payloadSortKey(record.requestHash),
          fields: { payload: payloadText },
          expiresAt: record.payloadUntil!,
        };
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
  // The task's cost starts with its enqueue: the payload item's write as DynamoDB reports it, and the
  // put by rule (it cannot report itself before it is sent).
  const payloadWrite = new CostCount();
  if (payloadItem)
    await countCost(payloadWrite, () =>
      putBody(ctx, id, payloadItem.key, payloadItem.fields, payloadItem.expiresAt, 'request'),
    );
  const item = withPutCost(applyTransition(record, placed) as TaskItem, payloadWrite.snapshot());
  const key = taskKey(id);
  const put = await conditionalPut<TaskItem>(writeTargetOf(ctx, 'request'), key, item, conditionOf(placed), {
    needCurrent: true,
  });
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

/** A finished task past its retention, which DynamoDB's TTL has not deleted yet (that can take days). */
function isExpired(existing: TaskItem, now: number): boolean {
  return existing.expiresAt !== undefined && existing.expiresAt * 1000 <= now;
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
