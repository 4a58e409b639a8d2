/** The task store: every operation of the lease protocol on one DynamoDB table, with injected clock and generators. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import { mathRandom, randomId, type IdGenerator, type RandomSource } from '../ids.js';
import type { Task } from '../task-model.js';
import { requestCancel } from './cancel.js';
import { claim, type ClaimResult } from './claim.js';
import { ClaimState } from './claim-state.js';
import type { StoreContext } from './context.js';
import { enqueue, type EnqueueResult } from './enqueue.js';
import type { ClaimInput, EnqueueInput, Lease, ListInput, RenewInput } from './inputs.js';
import { complete, fail, finishCancel, release, renewLeases, type RenewOutcome } from './lease-writes.js';
import { promoteTask, recoverExpired, recoverTask, type RecoveryFix, type RecoveryReport } from './recovery.js';
import { redrive } from './redrive.js';
import { getTask, listTasks, type TaskPage } from './task-queries.js';
import { queueDepth, type QueueDepth } from './queue-depth.js';

export interface TaskStoreOptions {
  doc: DynamoDBDocumentClient;
  config: LeaseholdConfig;
  clock?: Clock;
  newId?: IdGenerator;
  random?: RandomSource;
  /** Told before each claim or recovery write is sent (histories for fault testing). */
  onIntent?: (op: 'claim' | 'recover', taskId: string) => void;
}

export class TaskStore {
  readonly ctx: StoreContext;
  private readonly claimStates = new Map<string, ClaimState>();

  constructor(options: TaskStoreOptions) {
    this.ctx = {
      doc: options.doc,
      tableName: options.config.tableName,
      config: options.config,
      clock: options.clock ?? systemClock(),
      newId: options.newId ?? randomId,
      random: options.random ?? mathRandom,
      ...(options.onIntent ? { onIntent: options.onIntent } : {}),
    };
  }

  enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    return this.readying(enqueue(this.ctx, input));
  }

  get(input: { id: string; owner?: string }): Promise<Task> {
    return getTask(this.ctx, input);
  }

  list(input: ListInput): Promise<TaskPage> {
    return listTasks(this.ctx, input);
  }

  /** Claims up to `max` due tasks of the given types for a worker (SKIP LOCKED: never waits on another claimer). */
  claim(input: ClaimInput): Promise<ClaimResult> {
    let state = this.claimStates.get(input.workerId);
    if (!state) this.claimStates.set(input.workerId, (state = new ClaimState()));
    return claim(this.ctx, input, state, (taskId, holder, onFix) => recoverTask(this.ctx, taskId, holder, onFix));
  }

  /**
   * A write through this store that may have put a task in the ready index: its claimers forget
   * which partitions they found empty, so they see the task at once (a task readied by another
   * process is seen within one poll interval).
   */
  private async readying<T>(write: Promise<T>): Promise<T> {
    try {
      return await write;
    } finally {
      for (const state of this.claimStates.values()) state.forgetDrained();
    }
  }

  renew(input: RenewInput): Promise<RenewOutcome[]> {
    return renewLeases(this.ctx, input);
  }

  complete(input: { lease: Lease; result?: unknown }): Promise<Task> {
    return complete(this.ctx, input);
  }

  fail(input: { lease: Lease; error: string; retryable?: boolean; backoff?: { baseMs: number; maxMs: number } }): Promise<Task> {
    return this.readying(fail(this.ctx, input));
  }

  release(input: { lease: Lease }): Promise<Task> {
    return this.readying(release(this.ctx, input));
  }

  finishCancel(input: { lease: Lease }): Promise<Task> {
    return finishCancel(this.ctx, input);
  }

  requestCancel(input: { id: string; owner?: string }): Promise<Task> {
    return requestCancel(this.ctx, input);
  }

  /** Puts a FAILED or CANCELLED task back in the queue with a fresh attempt budget. */
  redrive(input: { id: string; owner?: string }): Promise<Task> {
    return this.readying(redrive(this.ctx, input));
  }

  /** Moves one delayed task into the ready index if it is due; false if it is not (or no longer) waiting. */
  promote(input: { id: string }): Promise<boolean> {
    return this.readying(promoteTask(this.ctx, input));
  }

  /** Due tasks waiting for the given types, and tasks under a lease (gauges for the dashboard). */
  depth(types: string[]): Promise<QueueDepth> {
    return queueDepth(this.ctx, types);
  }

  /** One bounded recovery sweep: expired leases fixed, due delayed tasks promoted. */
  recover(onFix?: (fix: RecoveryFix) => void): Promise<RecoveryReport> {
    return this.readying(recoverExpired(this.ctx, onFix));
  }
}
