/** The task as stored, and its conversion to the Task callers see. */
import type { Task } from '../task-model.js';
import type { LeaseholdConfig } from '../config.js';
import { retentionExpiry } from '../lease-rules.js';
import { TTL_ATTRIBUTE } from '../table-layout.js';
import { COST_ATTRIBUTES, costOfItem } from './task-cost.js';

/**
 * Attributes of a task item: the Task fields, with JSON values (payload, result) stored as text so any
 * JSON survives unchanged, plus the keys and bookkeeping only the store uses.
 */
export interface TaskItem extends Omit<Task, 'payload' | 'result' | 'children'> {
  pk: string;
  sk: string;
  /** The payload's JSON text when it fits in the task item (task-body.ts); else `payloadBytes` tells its size. */
  payload?: string;
  /** Set when the payload has its own item (PAYLOAD, task-body.ts): its size in bytes. */
  payloadBytes?: number;
  /** The payload item's TTL (epoch seconds), as the last write that set it left it (payload-lifetime.ts). */
  payloadUntil?: number;
  /** The result's JSON text when it fits; else `resultToken` names its OUTCOME item. */
  result?: string;
  resultToken?: number;
  /** When the error text did not fit: `error` holds its start, OUTCOME#`errorToken` the whole text. */
  errorToken?: number;
  shard: number;
  /**
   * The rotation it waits in (group-rules.ts): set at enqueue for a grouped task and every task of a type
   * with fair shares; its ready entry is then filed under it (table-layout.ts rotationPartitionOf).
   */
  rotation?: string;
  /** The claim id of the group slot that admitted its current or last claim (group-slots.ts). */
  groupClaim?: string;
  /** Claim ids fenced off by claimers that took over their slots: a late write of one is refused. */
  groupVoids?: Set<string>;
  requestHash?: string;
  /** A child's number in its parent (flow-rules.ts): its id is childTaskId(parentId, childIndex). */
  childIndex?: number;
  /**
   * A child's mark of its parent's life: the parent's `createdAt` when the child was written. A parent's
   * id comes back when its key is used again after its retention (isChildOfThisLife, flow-rules.ts).
   * Absent on children written before the mark: taken as of this life.
   */
  parentCreatedAt?: number;
  /** A parent's children so far (numbered 0..childCount-1), and how many of them have not been counted ended. */
  childCount?: number;
  childrenPending?: number;
  /** The numbers of the children whose ends were counted (each once: conditions.ts childNotCounted). */
  childrenEnded?: Set<number>;
  /** How many counted children failed it (not optional, FAILED or CANCELLED), and the last one's text. */
  childFailures?: number;
  childFailure?: string;
  /** The child count when the parent last asked to wait: a retried attempt numbers its children from here. */
  childBase?: number;
  /** A flow root's fingerprint of the whole flow as sent: a resend of its idempotency key must match it. */
  flowHash?: string;
  /** When it last began to wait for its children (a child still missing long after counts as failed). */
  waitingSince?: number;
  /** How many times recovery looked at this waiting parent (its next look backs off: nextFlowCheck). */
  flowChecks?: number;
  /** Id of the last write made to the item: a read-back compares it to tell our own applied write from someone else's. */
  writeId?: string;
  readyPk?: string;
  readySk?: string;
  /** A leased task's lease-index keys (`LEASE#<shard>`, at or just past its lease expiry). */
  sweepPk?: string;
  sweepAt?: number;
  /** A delayed task's delay-index keys (`DELAY#<shard>`, its due time). */
  delayPk?: string;
  delayAt?: number;
  /** The ready keys a delayed task takes when it becomes due (copied by promotion without a read). */
  dueReadyPk?: string;
  dueReadySk?: string;
  ownerPk: string;
  ownerSk: string;
  expiresAt?: number;
}

const optional = <K extends keyof Task>(key: K, value: Task[K] | undefined): Partial<Task> =>
  value === undefined ? {} : { [key]: value };

/**
 * The Task a caller sees. `body` brings the payload, result and whole error, as read with the task
 * (task-body.ts: inline in the item or in items of their own). Without it the task is shown as a list
 * shows it: no payload or result, and the start of a long error.
 */
export function toTask(
  item: TaskItem,
  body: { payload?: string; result?: string; error?: string } = { error: item.error },
): Task {
  return {
    id: item.id,
    type: item.type,
    status: item.status,
    priority: item.priority,
    ...optional('payload', body.payload === undefined ? undefined : (JSON.parse(body.payload) as unknown)),
    owner: item.owner,
    attempts: item.attempts,
    maxAttempts: item.maxAttempts,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    availableAt: item.availableAt,
    leaseToken: item.leaseToken,
    ...optional('payloadBytes', item.payloadBytes),
    ...optional('timeoutMs', item.timeoutMs),
    ...optional('idempotencyKey', item.idempotencyKey),
    ...optional('group', item.group),
    ...optional('debounceKey', item.debounceKey),
    ...optional('parentId', item.parentId),
    ...optional('optional', item.optional),
    ...optional(
      'children',
      item.childCount === undefined
        ? undefined
        : { total: item.childCount, pending: Math.max(0, item.childrenPending ?? 0) },
    ),
    ...optional('startedAt', item.startedAt),
    ...optional('finishedAt', item.finishedAt),
    ...optional('leaseOwner', item.leaseOwner),
    ...optional('leaseUntil', item.leaseUntil),
    ...optional('progress', item.progress),
    ...optional('progressNote', item.progressNote),
    ...optional('result', body.result === undefined ? undefined : (JSON.parse(body.result) as unknown)),
    ...optional('error', body.error),
    ...optional(
      'cost',
      COST_ATTRIBUTES.requests in item ? costOfItem(item as unknown as Record<string, unknown>) : undefined,
    ),
  };
}

/** Fields every terminal write sets: when it finished, and when DynamoDB TTL may delete it. */
export function finishedFields(
  now: number,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Record<string, number> {
  return { finishedAt: now, [TTL_ATTRIBUTE]: retentionExpiry(now, config) };
}

/** A finished task past its retention, which DynamoDB's TTL has not deleted yet (that can take days). */
export function isExpired(existing: Pick<TaskItem, 'expiresAt'>, now: number): boolean {
  return existing.expiresAt !== undefined && existing.expiresAt * 1000 <= now;
}
