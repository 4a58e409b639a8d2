/**
 * The task store: every operation of the lease protocol on one DynamoDB table, with injected clock
 * and generators. It implements each runtime port (LeaseStore for workers, TaskReads and
 * TaskCommands for the API, Sweeper for recovery) and keeps no state of its callers: a worker's claim
 * memory is the worker's, passed in with each claim.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from '../clock.js';
import { LeaseEvents } from '../events.js';
import { mathRandom, randomId, type IdGenerator, type RandomSource } from '../ids.js';
import type { Task } from '../task-model.js';
import { requestCancel } from './cancel.js';
import { claim, type ClaimResult } from './claim.js';
import { ClaimState } from './claim-state.js';
import type { StoreConfig, StoreContext } from './context.js';
import { enqueue, type EnqueueResult } from './enqueue.js';
import type { ClaimInput, EnqueueInput, Lease, ListInput, ProgressReport, RenewInput } from './inputs.js';
import { complete, fail, finishCancel, release, renewLeases, type RenewOutcome } from './lease-writes.js';
import { dueDelayed, type DueTask } from './delayed-reads.js';
import type { FailInput, LeaseStore, Sweeper, TaskCommands, TaskReads, Timekeeping } from './ports.js';
import { promoteTask, recoverExpired, type RecoveryReport } from './recovery.js';
import { retryTask } from './retry.js';
import { getTask, listTasks, type TaskPage } from './task-queries.js';
import { queueDepth, type QueueDepth } from './queue-depth.js';
import { attachCostMeter } from './cost-meter.js';
import { writeQueueSummary, type QueueSummary } from './queue-summary.js';
import { HeldItems } from './held-items.js';

export interface TaskStoreOptions {
  doc: DynamoDBDocumentClient;
  config: StoreConfig;
  clock?: Clock;
  newId?: IdGenerator;
  random?: RandomSource;
  /** Concurrency limits the task definitions declare; LEASEHOLD_TYPE_CONCURRENCY overrides them per type. */
  definitionLimits?: Record<string, number>;
  /** Where the store's lifecycle steps go (claim intents, recovery fixes, readied tasks); a fresh stream by default. */
  events?: LeaseEvents;
}

export class TaskStore implements LeaseStore, TaskReads, TaskCommands, Sweeper, Timekeeping {
  readonly ctx: StoreContext;

  constructor(options: TaskStoreOptions) {
    this.ctx = {
      doc: options.doc,
      tableName: options.config.tableName,
      config: options.config,
      clock: options.clock ?? systemClock(),
      newId: options.newId ?? randomId,
      random: options.random ?? mathRandom,
      events: options.events ?? new LeaseEvents(),
      typeLimits: { ...options.definitionLimits, ...options.config.typeConcurrency },
      heldItems: new HeldItems(),
    };
    // Every request the store sends for a task is counted into that task's cost (cost-meter.ts).
    attachCostMeter(options.doc);
  }

  get events(): LeaseEvents {
    return this.ctx.events;
  }

  /** A new task due now readies the queue (claimers look again at once); a delayed one waits for its promotion. */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const result = await enqueue(this.ctx, input);
    if (!result.created) return result;
    const { id, type, availableAt } = result.task;
    this.ctx.events.emit('task:enqueued', { taskId: id, type, availableAt });
    if (availableAt <= this.ctx.clock.now()) this.ctx.events.emit('task:readied', { taskId: id });
    return result;
  }

  get(input: { id: string; owner?: string }): Promise<Task> {
    return getTask(this.ctx, input);
  }

  list(input: ListInput): Promise<TaskPage> {
    return listTasks(this.ctx, input);
  }

  /**
   * Claims up to `max` due tasks of the given types (SKIP LOCKED: never waits on another claimer).
   * A worker passes its own memory, kept between its rounds; a one-off claim gets a fresh one.
   */
  claim(input: ClaimInput, memory: ClaimState = new ClaimState()): Promise<ClaimResult> {
    return claim(this.ctx, input, memory);
  }

  renew(input: RenewInput): Promise<RenewOutcome[]> {
    return renewLeases(this.ctx, input);
  }

  complete(input: { lease: Lease; result?: unknown }): Promise<Task> {
    return complete(this.ctx, input);
  }

  fail(input: FailInput): Promise<Task> {
    return this.readied(fail(this.ctx, input));
  }

  release(input: { lease: Lease; progress?: ProgressReport }): Promise<Task> {
    return this.readied(release(this.ctx, input));
  }

  finishCancel(input: { lease: Lease }): Promise<Task> {
    return finishCancel(this.ctx, input);
  }

  requestCancel(input: { id: string; owner?: string }): Promise<Task> {
    return requestCancel(this.ctx, input);
  }

  /** Puts a FAILED or CANCELLED task back in the queue with a fresh attempt budget. */
  retry(input: { id: string; owner?: string }): Promise<Task> {
    return this.readied(retryTask(this.ctx, input));
  }

  promote(input: { id: string }): Promise<boolean> {
    return this.readied(promoteTask(this.ctx, input));
  }

  /** Delayed tasks (and retries after backoff) due at or before `before`: the timekeeper's read. */
  dueDelayed(input: { before: number; limit: number }): Promise<DueTask[]> {
    return dueDelayed(this.ctx, input);
  }

  /** Due tasks waiting for the given types, and tasks under a lease (gauges for the dashboard). */
  depth(types: string[]): Promise<QueueDepth> {
    return queueDepth(this.ctx, types);
  }

  /** Whether there is work, in one item: written after each gauge, read by the worker's scheduled tick. */
  writeSummary(summary: QueueSummary): Promise<void> {
    return writeQueueSummary(this.ctx, summary);
  }

  /** One bounded recovery sweep: expired leases fixed, due delayed tasks promoted. */
  recover(): Promise<RecoveryReport> {
    return this.readied(recoverExpired(this.ctx));
  }

  /**
   * A write that may have put a task in the ready index: 'task:readied' tells claimers sharing this
   * stream to forget which partitions they found empty, so they see the task at once (a task readied
   * by another process is seen within one poll interval).
   */
  private async readied<T>(write: Promise<T>): Promise<T> {
    try {
      return await write;
    } finally {
      this.ctx.events.emit('task:readied', {});
    }
  }
}
