/** The task as stored, and its conversion to the Task callers see. */
import type { Task } from '../task-model.js';
import type { LeaseholdConfig } from '../config.js';
import { retentionExpiry } from '../lease-rules.js';
import { TTL_ATTRIBUTE } from '../table-layout.js';

/**
 * Attributes of a task item: the Task fields, with JSON values (payload, result) stored as text so any
 * JSON survives unchanged, plus the keys and bookkeeping only the store uses.
 */
export interface TaskItem extends Omit<Task, 'payload' | 'result'> {
  pk: string;
  sk: string;
  payload: string;
  result?: string;
  shard: number;
  requestHash?: string;
  /** Id of the last write made to the item: a read-back compares it to tell our own applied write from someone else's. */
  writeId?: string;
  readyPk?: string;
  readySk?: string;
  sweepPk?: string;
  sweepAt?: number;
  /** The ready keys a delayed task takes when it becomes due (copied by promotion without a read). */
  dueReadyPk?: string;
  dueReadySk?: string;
  ownerPk: string;
  ownerSk: string;
  expiresAt?: number;
}

const optional = <K extends keyof Task>(key: K, value: Task[K] | undefined): Partial<Task> =>
  value === undefined ? {} : { [key]: value };

export function toTask(item: TaskItem): Task {
  return {
    id: item.id,
    type: item.type,
    status: item.status,
    priority: item.priority,
    payload: JSON.parse(item.payload) as unknown,
    owner: item.owner,
    attempts: item.attempts,
    maxAttempts: item.maxAttempts,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    availableAt: item.availableAt,
    leaseToken: item.leaseToken,
    ...optional('timeoutMs', item.timeoutMs),
    ...optional('idempotencyKey', item.idempotencyKey),
    ...optional('startedAt', item.startedAt),
    ...optional('finishedAt', item.finishedAt),
    ...optional('leaseOwner', item.leaseOwner),
    ...optional('leaseUntil', item.leaseUntil),
    ...optional('progress', item.progress),
    ...optional('progressNote', item.progressNote),
    ...optional('result', item.result === undefined ? undefined : (JSON.parse(item.result) as unknown)),
    ...optional('error', item.error),
  };
}

/** Fields every terminal write sets: when it finished, and when DynamoDB TTL may delete it. */
export function finishedFields(
  now: number,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Record<string, number> {
  return { finishedAt: now, [TTL_ATTRIBUTE]: retentionExpiry(now, config) };
}
