/**
 * The narrow interfaces each part of the runtime depends on, in the manner of graphile-worker's
 * getJob/completeJob and BullMQ's backend contract. `TaskStore` implements them all on DynamoDB (its
 * request side, `TaskRequests`, the API's reads and TaskCommands alone); the worker's tests use an
 * in-memory fake of `LeaseStore` with fake timers.
 */
import type { LegacyDelayMoves } from './legacy-delays.js';
import type { GaugeRotation } from './gauge-rotation.js';
import type { Task } from '../task-model.js';
import type { ClaimResult } from './claim.js';
import type { ClaimState } from './claim-state.js';
import type { EnqueueResult } from './enqueue.js';
import type { FlowResult } from './flow-enqueue.js';
import type { FlowInput } from '../flow-inputs.js';
import type { ClaimControls } from './type-controls.js';
import type {
  ClaimInput,
  EnqueueInput,
  FailInput,
  Lease,
  ListInput,
  ProgressReport,
  RenewInput,
} from '../task-inputs.js';

export type { FailInput };
import type { RenewOutcome } from './lease-writes.js';
import type { StoredStep } from './steps.js';
import type { ChildView, EnqueueChildrenInput, RaisedChildren } from './children.js';
import type { QueueDepth } from './queue-depth.js';
import type { QueueSummary } from './queue-summary.js';
import type { RecoveryReport } from './recovery.js';
import type { DueTask } from './delayed-reads.js';
import type { TaskPage } from './task-queries.js';
import type { OutcomeFlush } from '../stats/outcome-recorder.js';
import type { QueueStats, StatsInput } from '../stats/stats-reader.js';
import type { TypesOverview } from '../stats/type-overview.js';
import type { PauseChange, TypeControl } from './type-controls.js';

/** What a worker and its executions do to tasks: the lease path. */
export interface LeaseStore {
  /** Claims up to `max` due tasks; `memory` is the claiming worker's, kept between its rounds. */
  claim(input: ClaimInput, memory: ClaimState): Promise<ClaimResult>;
  renew(input: RenewInput): Promise<RenewOutcome[]>;
  complete(input: { lease: Lease; result?: unknown }): Promise<Task>;
  fail(input: FailInput): Promise<Task>;
  /** Gives the task back unspent; `progress` is kept for the next attempt. */
  release(input: { lease: Lease; progress?: ProgressReport }): Promise<Task>;
  finishCancel(input: { lease: Lease }): Promise<Task>;
  /** Moves one delayed task into the ready index if it is due; false if it is not (or no longer) waiting. */
  promote(input: { id: string }): Promise<boolean>;
  /** As OutcomeFlusher's; optional: a stand-in store (a test's fake) counts nothing. */
  flushOutcomes?(): Promise<OutcomeFlush>;
  /**
   * The types an operator paused (their tasks are not claimed) and the types with grouped tasks (their
   * rotations are read); optional: a stand-in store pauses none and groups none.
   */
  claimControls?(): Promise<ClaimControls>;
  /** Flows and steps (store/children.ts, store/steps.ts); optional: a stand-in store has none. */
  readSteps?(task: { id: string; createdAt: number }): Promise<Map<string, StoredStep>>;
  writeStep?(
    lease: Pick<Lease, 'taskId' | 'token' | 'createdAt'>,
    name: string,
    result: string,
  ): Promise<void>;
  enqueueChildren?(input: EnqueueChildrenInput): Promise<RaisedChildren>;
  waitForChildren?(input: { lease: Lease; childCount: number }): Promise<Task>;
  readChildren?(parent: { id: string; createdAt: number }, count: number): Promise<ChildView[]>;
}

/** What the API reads. */
export interface TaskReads {
  get(input: { id: string; owner?: string }): Promise<Task>;
  /** GET /tasks/{id}/children: a parent's children (at most 1,000); optional: a stand-in store has no flows. */
  children?(input: { id: string; owner?: string }): Promise<ChildView[]>;
  /** GET /tasks/{id}/steps: the steps a task stored, oldest first; optional: a stand-in store has none. */
  steps?(input: { id: string; owner?: string }): Promise<StoredStep[]>;
  list(input: ListInput): Promise<TaskPage>;
  depth(types: string[]): Promise<QueueDepth>;
  /** GET /stats: the queue's last summary, the owner's running tasks and its outcomes per minute. */
  stats(input: StatsInput): Promise<QueueStats>;
}

/** What the API and schedules change. */
export interface TaskCommands {
  enqueue(input: EnqueueInput): Promise<EnqueueResult>;
  /** A flow: a root and its children, written whole or not at all (flow-enqueue.ts). */
  enqueueFlow?(input: FlowInput): Promise<FlowResult>;
  requestCancel(input: { id: string; owner?: string }): Promise<Task>;
  /** Puts a FAILED or CANCELLED task back in the queue with a fresh attempt budget. */
  retry(input: { id: string; owner?: string }): Promise<Task>;
}

/** An operator's controls per task type (GET /types, POST /types/{type}/pause and /resume). */
export interface TypeControls {
  typesOverview(types: readonly string[]): Promise<TypesOverview>;
  setTypePaused(change: PauseChange): Promise<TypeControl>;
}

/** Writes what this process counted ended, per owner and minute, to the outcome counters (stats/); never throws. */
export interface OutcomeFlusher {
  flushOutcomes(): Promise<OutcomeFlush>;
}

/** What the recovery function runs: a bounded sweep, the queue's gauges, and the summary the worker's tick reads. */
export interface Sweeper extends OutcomeFlusher {
  recover(): Promise<RecoveryReport>;
  depth(types: string[]): Promise<QueueDepth>;
  /** recover() and depth() in one, reading each sweep partition once for both (and idle types in part, given a rotation). */
  sweepAndMeasure(
    types: string[],
    rotation?: GaugeRotation,
  ): Promise<{ report: RecoveryReport; depth: QueueDepth }>;
  writeSummary(summary: QueueSummary): Promise<void>;
  /** Moves delayed tasks queued before the delay index existed into it (legacy-delays.ts). */
  moveLegacyDelays(): Promise<LegacyDelayMoves>;
}

/** What the fleet's timekeeper does: find delayed tasks falling due soon, and promote each when it does. */
export interface Timekeeping {
  dueDelayed(input: { before: number; limit: number }): Promise<DueTask[]>;
  promote(input: { id: string }): Promise<boolean>;
}
