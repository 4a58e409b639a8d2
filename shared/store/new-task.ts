/** A new task's item as enqueue writes it (enqueue.ts, and debounce.ts for a key's new generation). */
import type * as z from 'zod';
import { requestFingerprint } from '../ids.js';
import { shardForId, taskKey } from '../table-layout.js';
import type { Task } from '../task-model.js';
import type { enqueueInput } from '../task-inputs.js';
import { rotationForTask } from '../group-rules.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalPut, type WriteResult } from './conditional-write.js';
import { CostCount, countCost } from './cost-meter.js';
import { withPutCost } from './recorded-cost.js';
import { putBody } from './task-body.js';
import { bodyExpiry, fitsInline, payloadSortKey } from './body-layout.js';
import type { TaskItem } from './task-item.js';
import { applyTransition, conditionOf, enqueued, type Transition } from './transitions.js';

export interface EnqueueResult {
  task: Task;
  /** False when an idempotency key matched an earlier enqueue and that task was returned. */
  created: boolean;
  /** A debounced enqueue joined this waiting task of its key (its due time and payload moved). */
  joined?: boolean;
}

/** A new task as enqueue writes it: its item, its placing edge, and its payload item when kept apart. */
export interface NewTask {
  record: Omit<TaskItem, 'status' | 'ownerPk' | 'ownerSk'>;
  placed: Transition;
  payloadItem: { key: string; fields: { payload: string }; expiresAt: number } | undefined;
  payloadText: string;
  requestHash: string;
}

/**
 * The item of a new task `id` for a checked input, due at its `availableAt` (or now + delay, or the
 * debounce window). A child is created no earlier than its parent (`createdAt`, flow-enqueue.ts and
 * children.ts), whatever the writer's clock.
 */
export function newTask(
  ctx: StoreContext,
  input: ParsedEnqueue,
  id: string,
  now: number,
  createdAt = now,
): NewTask {
  const availableAt = input.availableAt ?? now + (input.delayMs ?? input.debounce?.windowMs ?? 0);
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
  // An idempotent task's payload item is named by its fingerprint (a repeat meets it); a debounced one's
  // by this request alone, so racing creators never share one that the loser then marks for TTL.
  const bodyHash =
    input.debounce !== undefined
      ? requestFingerprint({ requestHash, request: ctx.newId() })
      : input.idempotencyKey !== undefined
        ? requestHash
        : undefined;
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
    ...(input.debounce === undefined ? {} : { debounceKey: input.debounce.key }),
    attempts: 0,
    maxAttempts: input.maxAttempts ?? ctx.config.defaultMaxAttempts,
    createdAt,
    updatedAt: now,
    availableAt,
    // Fencing tokens of a task id only ever grow. A random id is never reused; an idempotent (or
    // debounced) one comes back when its key is used again after the record expired, so its tokens
    // start from the clock, above every token the earlier record can have handed out (one per claim).
    leaseToken: input.idempotencyKey === undefined && input.debounce === undefined ? 0 : now,
    writeId: '',
    ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
    ...(bodyHash === undefined ? {} : { requestHash: bodyHash }),
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
  return { record, placed, payloadItem, payloadText, requestHash };
}

export type ParsedEnqueue = z.output<typeof enqueueInput>;

/**
 * Writes a new task: its payload item first when kept apart (an UpdateItem of its own key), then the
 * task item with a put conditioned on its edge. Its cost starts with this: the payload item's write as
 * DynamoDB reports it, and the put by rule (it cannot report itself before it is sent).
 */
export async function putNewTask(
  ctx: StoreContext,
  task: NewTask,
  options: { needCurrent?: boolean } = {},
): Promise<{ item: TaskItem; put: WriteResult<TaskItem> }> {
  const { record, placed, payloadItem } = task;
  const payloadWrite = new CostCount();
  if (payloadItem)
    await countCost(payloadWrite, () =>
      putBody(ctx, record.id, payloadItem.key, payloadItem.fields, payloadItem.expiresAt, 'request'),
    );
  const item = withPutCost(applyTransition(record, placed) as TaskItem, payloadWrite.snapshot());
  const put = await conditionalPut<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(record.id),
    item,
    conditionOf(placed),
    options,
  );
  return { item, put };
}
