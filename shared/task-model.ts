/** Statuses exactly as the API shows them. */
import type { TaskCost } from './store/task-cost.js';
export const TaskStatus = {
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  SUCCESS: 'SUCCESS',
  FAILED: 'FAILED',
  CANCEL_REQUESTED: 'CANCEL_REQUESTED',
  CANCELLED: 'CANCELLED',
  /** A parent of a flow waiting for its children to end: claimable again once the last has (flow-rules.ts). */
  WAITING_CHILDREN: 'WAITING_CHILDREN',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export const TERMINAL_STATUSES: readonly TaskStatus[] = [
  TaskStatus.SUCCESS,
  TaskStatus.FAILED,
  TaskStatus.CANCELLED,
];
/** Statuses in which a worker holds a lease on the task. */
export const LEASED_STATUSES: readonly TaskStatus[] = [TaskStatus.RUNNING, TaskStatus.CANCEL_REQUESTED];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** A task as callers see it. Times are epoch milliseconds; JSON payload/result are parsed values. */
export interface Task {
  id: string;
  type: string;
  status: TaskStatus;
  priority: number;
  /**
   * Absent from lists (they show what a list needs) and from a task whose payload expired
   * (`maxWaitDays`); a read of one task and a claim bring it.
   */
  payload?: unknown;
  /** Bytes of the payload's JSON, when it is kept apart from the task item (larger than 128 bytes). */
  payloadBytes?: number;
  owner: string;
  attempts: number;
  maxAttempts: number;
  createdAt: number;
  updatedAt: number;
  availableAt: number;
  /** Fencing token: grows by one with every claim of this task. */
  leaseToken: number;
  timeoutMs?: number;
  idempotencyKey?: string;
  /** The debounce key it was enqueued with: later enqueues of the key join it until it starts. */
  debounceKey?: string;
  /** Its group (named within its owner): at most the type's `groupConcurrency` of a group run at once. */
  group?: string;
  startedAt?: number;
  finishedAt?: number;
  leaseOwner?: string;
  leaseUntil?: number;
  progress?: number;
  progressNote?: string;
  result?: unknown;
  error?: string;
  /** The parent it is a child of, in a flow (its end counts towards the parent's readiness). */
  parentId?: string;
  /** A child whose FAILED or CANCELLED end does not fail its parent. */
  optional?: boolean;
  /** Its children, if it is a parent: how many, and how many have not ended (or not yet been counted). */
  children?: { total: number; pending: number };
  /** What it cost so far: DynamoDB requests and units, handler milliseconds (shared/store/task-cost.ts). */
  cost?: TaskCost;
}
