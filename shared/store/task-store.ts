/**
 * The task store: every operation of the lease protocol on one DynamoDB table, with injected clock
 * and generators. It implements each runtime port (LeaseStore for workers, TaskReads and
 * TaskCommands for the API, Sweeper for recovery) and keeps no state of its callers: a worker's claim
 * memory is the worker's, passed in with each claim. The request side (enqueue, reads, cancel, retry,
 * stats) is TaskRequests (task-requests.ts), which processes without workers build alone.
 */
import type { Task } from '../task-model.js';
import { claim, type ClaimResult } from './claim.js';
import { ClaimState } from './claim-state.js';
import type { ClaimInput, Lease, ProgressReport, RenewInput } from '../task-inputs.js';
import { complete, fail, finishCancel, release, renewLeases, type RenewOutcome } from './lease-writes.js';
import { dueDelayed, type DueTask } from './delayed-reads.js';
import { moveLegacyDelays, type LegacyDelayMoves } from './legacy-delays.js';
import type { FailInput, LeaseStore, Sweeper, TaskCommands, TaskReads, Timekeeping } from './ports.js';
import { sweepAndMeasure } from './minute-sweep.js';
import type { GaugeRotation } from './gauge-rotation.js';
import { promoteTask, recoverExpired, type RecoveryReport } from './recovery.js';
import { queueDepth, type QueueDepth } from './queue-depth.js';
import { writeQueueSummary, type QueueSummary } from './queue-summary.js';
import { TaskRequests } from './task-requests.js';
import { readiedEvent, type ReadyKey } from './readied-event.js';
import { readSteps, writeStep, type StoredStep } from './steps.js';
import {
  enqueueChildren,
  readChildren,
  waitForChildren,
  type ChildView,
  type RaisedChildren,
} from './children.js';

export type { TaskStoreOptions } from './task-requests.js';

export class TaskStore
  extends TaskRequests
  implements LeaseStore, TaskReads, TaskCommands, Sweeper, Timekeeping
{
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

  readSteps(task: { id: string; createdAt: number }): Promise<Map<string, StoredStep>> {
    return readSteps(this.ctx, task);
  }

  writeStep(
    lease: Pick<Lease, 'taskId' | 'token' | 'createdAt'>,
    name: string,
    result: string,
  ): Promise<void> {
    return writeStep(this.ctx, lease, name, result);
  }

  /** A handler's children: announced as new tasks are, so claimers in this process and the kick see them. */
  async enqueueChildren(input: Parameters<typeof enqueueChildren>[1]): Promise<RaisedChildren> {
    const raised = await enqueueChildren(this.ctx, input);
    const availableAt = this.ctx.clock.now();
    raised.ids.forEach((taskId, i) =>
      this.ctx.events.emit('task:enqueued', { taskId, type: input.children[i]!.type, availableAt }),
    );
    this.ctx.events.emit('task:readied', {});
    return raised;
  }

  waitForChildren(input: { lease: Lease; childCount: number }): Promise<Task> {
    return this.readied(waitForChildren(this.ctx, input));
  }

  readChildren(parent: { id: string; createdAt: number }, count: number): Promise<ChildView[]> {
    return readChildren(this.ctx, parent, count);
  }

  async promote(input: { id: string }): Promise<boolean> {
    let byKey: ReadyKey | undefined;
    try {
      byKey = await promoteTask(this.ctx, input);
      return byKey !== undefined;
    } finally {
      // Claimers in this process take it by key, or look at every partition again (readied-event.ts).
      this.ctx.events.emit('task:readied', byKey ? readiedEvent(input.id, byKey) : {});
    }
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

  moveLegacyDelays(): Promise<LegacyDelayMoves> {
    return moveLegacyDelays(this.ctx);
  }

  /** One bounded recovery sweep: expired leases fixed, due delayed tasks promoted. */
  recover(): Promise<RecoveryReport> {
    return this.readied(recoverExpired(this.ctx));
  }

  /**
   * The recovery Lambda's minute: recover() and then depth(), each sweep partition read once for both.
   * `rotation`: the caller's memory of its last sweeps, so a type found empty is looked at cheaply.
   */
  sweepAndMeasure(
    types: string[],
    rotation?: GaugeRotation,
  ): Promise<{ report: RecoveryReport; depth: QueueDepth }> {
    return this.readied(sweepAndMeasure(this.ctx, types, rotation));
  }
}
