/** Enqueue: one conditional put. An idempotency key makes the id deterministic, so a retry meets its own first write. */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { IdempotencyConflictError } from '../errors.js';
import { idempotentTaskId, requestFingerprint } from '../ids.js';
import { delaySweepPartition, INDEX, ownerSortKey, readyPartition, readySortKey, shardForId, taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { itemIsNew } from './conditions.js';
import { Expression } from './expression.js';
import { enqueueInput, parseInput, type EnqueueInput } from './inputs.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';

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
  });
  const shard = shardForId(id);
  const ready = { readyPk: readyPartition(input.type, shard), readySk: readySortKey(input.priority, availableAt, now, id) };
  const due = availableAt <= now;
  const writeId = ctx.newId();
  const item: TaskItem = {
    ...(taskKey(id) as { pk: string; sk: string }),
    id,
    type: input.type,
    status: TaskStatus.QUEUED,
    priority: input.priority,
    payload: payloadText,
    owner: input.owner,
    shard,
    attempts: 0,
    maxAttempts: input.maxAttempts ?? ctx.config.defaultMaxAttempts,
    createdAt: now,
    updatedAt: now,
    availableAt,
    leaseToken: 0,
    writeId,
    ownerPk: input.owner,
    ownerSk: ownerSortKey(now, id),
    ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey, requestHash }),
    // A due task goes straight to the ready index; a delayed one waits in the sweep index until promoted.
    ...(due ? ready : { [INDEX.sweep.partition]: delaySweepPartition(shard), [INDEX.sweep.sort]: availableAt, dueReadyPk: ready.readyPk, dueReadySk: ready.readySk }),
  };
  const condition = new Expression().require(itemIsNew).params();
  try {
    await ctx.doc.send(new PutCommand({ TableName: ctx.tableName, Item: item, ...condition }));
    return { task: toTask(item), created: true };
  } catch (error) {
    if (!isConditionalCheckFailed(error) || !input.idempotencyKey) throw error;
    const existing = await readTaskItem(ctx, id);
    if (!existing) throw error;
    // Our own first attempt, applied although its answer was lost, counts as created.
    if (existing.writeId === writeId) return { task: toTask(existing), created: true };
    if (existing.requestHash !== requestHash) throw new IdempotencyConflictError(input.idempotencyKey, toTask(existing));
    return { task: toTask(existing), created: false };
  }
}
