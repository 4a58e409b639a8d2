/**
 * The request side of the task store: what a caller asks of the queue (enqueue, read, list, cancel,
 * retry, stats) and the outcome counts that go with it, without the lease path. The API and fire
 * Lambdas build only this (shared/request-runtime.ts), so their bundles leave out the claim path,
 * lease writes, recovery and the depth gauge; `TaskStore` (task-store.ts) extends it with those for
 * the worker, recovery and the local stack.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from '../clock.js';
import { LeaseEvents } from '../events.js';
import { mathRandom, randomId, type IdGenerator, type RandomSource } from '../ids.js';
import type { Task } from '../task-model.js';
import { DEFAULT_PRIORITY, readySortKey } from '../table-layout.js';
import { requestCancel } from './cancel.js';
import type { StoreConfig, StoreContext } from './context.js';
import { enqueue, type EnqueueResult } from './enqueue.js';
import { writeFlow, type FlowResult } from './flow-enqueue.js';
import { flowInput, type FlowInput, type FlowNode } from '../flow-inputs.js';
import { enqueueInput, parseInput, type EnqueueInput, type ListInput } from '../task-inputs.js';
import type { OutcomeFlusher, TaskCommands, TaskReads } from './ports.js';
import { retryTask } from './retry.js';
import { getChildren, getSteps, getTask, listTasks, type TaskPage } from './task-queries.js';
import type { ChildView } from './children-reads.js';
import type { StoredStep } from './steps.js';
import { attachCostMeter } from './cost-meter.js';
import { HeldItems } from './held-items.js';
import { OutcomeRecorder, type OutcomeFlush } from '../stats/outcome-recorder.js';
import { readStats, type QueueStats, type StatsInput } from '../stats/stats-reader.js';
import type { RateLimit } from '../rate-rules.js';
import { readTypesOverview, type TypesOverview } from '../stats/type-overview.js';
import { NO_GROUPING, rotationForTask, type TypeGrouping } from '../group-rules.js';
import {
  markTypeGrouped,
  readClaimControls,
  setTypePaused,
  type ClaimControls,
  type PauseChange,
  type TypeControl,
} from './type-controls.js';

/** The types of a flow's tasks that wait in rotations (their type must be marked before they are written). */
function rotatedTypes(
  node: FlowNode,
  owner: string,
  grouping: TypeGrouping,
  into = new Set<string>(),
): Set<string> {
  if (rotationForTask(grouping, { type: node.task.type, owner, group: node.task.group }) !== undefined)
    into.add(node.task.type);
  for (const child of node.children ?? []) rotatedTypes(child, owner, grouping, into);
  return into;
}

export interface TaskStoreOptions {
  doc: DynamoDBDocumentClient;
  config: StoreConfig;
  clock?: Clock;
  newId?: IdGenerator;
  random?: RandomSource;
  /** Concurrency limits the task definitions declare; LEASEHOLD_TYPE_CONCURRENCY overrides them per type. */
  definitionLimits?: Record<string, number>;
  /** Rate limits the task definitions declare (defineTask({ rateLimit })). */
  definitionRateLimits?: Record<string, RateLimit>;
  /** Groups and fair shares the task definitions declare (defineTask({ groupConcurrency, fairShares })). */
  definitionGrouping?: TypeGrouping;
  /** Where the store's lifecycle steps go (claim intents, recovery fixes, readied tasks); a fresh stream by default. */
  events?: LeaseEvents;
}

export class TaskRequests
  implements Pick<TaskReads, 'get' | 'children' | 'steps' | 'list' | 'stats'>, TaskCommands, OutcomeFlusher
{
  /** The whole store context, lease-path parts included: schedules and the kicker's writes take it too. */
  readonly ctx: StoreContext;
  /** Counts what ends on this store's lifecycle stream, per owner and minute, until flushOutcomes writes it. */
  readonly outcomes: OutcomeRecorder;

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
      typeRateLimits: { ...options.definitionRateLimits },
      typeGrouping: options.definitionGrouping ?? NO_GROUPING,
      heldItems: new HeldItems(),
    };
    // Every request the store sends for a task is counted into that task's cost (cost-meter.ts).
    attachCostMeter(options.doc);
    this.outcomes = new OutcomeRecorder(this.ctx);
  }

  get events(): LeaseEvents {
    return this.ctx.events;
  }

  /** A new task due now readies the queue (claimers look again at once); a delayed one waits for its promotion. */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    // A type with rotated tasks is marked before the first is written, so claimers read its rotations
    // (checked first: a bad input writes nothing, not even the mark).
    if (rotationForTask(this.ctx.typeGrouping, input) !== undefined)
      await this.markGrouped(parseInput(enqueueInput, 'enqueue', input).type);
    const result = await enqueue(this.ctx, input);
    // A debounce join moved the task's due time: claimers and timekeepers hear of it as of a new task.
    if (!result.created && !result.joined) return result;
    const { id, type, availableAt, priority, createdAt } = result.task;
    const ready = availableAt <= this.ctx.clock.now();
    // A rotated task is never offered by key: it waits its rotation's turn (and its group's slot).
    const rotated = rotationForTask(this.ctx.typeGrouping, result.task) !== undefined;
    this.ctx.events.emit('task:enqueued', {
      taskId: id,
      type,
      availableAt,
      ...(rotated ? { rotated } : {}),
      ...(ready && priority === DEFAULT_PRIORITY && !rotated
        ? { readySk: readySortKey(priority, availableAt, createdAt, id) }
        : {}),
    });
    if (ready) this.ctx.events.emit('task:readied', { taskId: id });
    return result;
  }

  /**
   * A flow (POST /flows): its tasks written parents first (flow-enqueue.ts). Each leaf due now is
   * announced as a new task is, so claimers in this process and the kick see it.
   */
  async enqueueFlow(input: FlowInput): Promise<FlowResult> {
    const parsed = parseInput(flowInput, 'enqueueFlow', input);
    for (const type of rotatedTypes(parsed.root, parsed.owner, this.ctx.typeGrouping))
      await this.markGrouped(type);
    const result = await writeFlow(this.ctx, parsed);
    for (const task of result.written)
      if (!task.parent)
        this.ctx.events.emit('task:enqueued', {
          taskId: task.id,
          type: task.type,
          availableAt: task.availableAt,
        });
    if (result.written.some((t) => !t.parent)) this.ctx.events.emit('task:readied', {});
    return result;
  }

  /** Types this process marked as grouped (type-controls.ts markTypeGrouped): once each. */
  private readonly markedGrouped = new Set<string>();

  private async markGrouped(type: string): Promise<void> {
    if (this.markedGrouped.has(type)) return;
    await markTypeGrouped(this.ctx, type);
    this.markedGrouped.add(type);
  }

  get(input: { id: string; owner?: string }): Promise<Task> {
    return getTask(this.ctx, input);
  }

  /** GET /tasks/{id}/children: a parent's children with their statuses, results and errors (owner-checked as get). */
  children(input: { id: string; owner?: string }): Promise<ChildView[]> {
    return getChildren(this.ctx, input);
  }

  /** GET /tasks/{id}/steps: the steps the task stored (ctx.step), oldest first (owner-checked as get). */
  steps(input: { id: string; owner?: string }): Promise<StoredStep[]> {
    return getSteps(this.ctx, input);
  }

  list(input: ListInput): Promise<TaskPage> {
    return listTasks(this.ctx, input);
  }

  requestCancel(input: { id: string; owner?: string }): Promise<Task> {
    return requestCancel(this.ctx, input);
  }

  /** Puts a FAILED or CANCELLED task back in the queue with a fresh attempt budget. */
  retry(input: { id: string; owner?: string }): Promise<Task> {
    return this.readied(retryTask(this.ctx, input));
  }

  /** GET /types: each of `types` with its controls and its waiting, running and delayed counts. */
  typesOverview(types: readonly string[]): Promise<TypesOverview> {
    return readTypesOverview(this.ctx, types);
  }

  /** The types paused now and the types with grouped tasks (one consistent Query of the controls). */
  claimControls(): Promise<ClaimControls> {
    return readClaimControls(this.ctx);
  }

  /** Pauses or resumes a type (POST /types/{type}/pause, /resume); a resume wakes claimers and the kick. */
  async setTypePaused(change: PauseChange): Promise<TypeControl> {
    const control = await setTypePaused(this.ctx, change);
    if (!control.paused) {
      this.ctx.events.emit('type:resumed', { type: control.type });
      this.ctx.events.emit('task:readied', {});
    }
    return control;
  }

  /** GET /stats: the queue's last summary, `owner`'s running tasks and outcomes per minute, in bounded reads. */
  stats(input: StatsInput): Promise<QueueStats> {
    return readStats(this.ctx, input);
  }

  /**
   * Writes the outcomes counted since the last flush (one UpdateItem per owner and minute touched; none
   * when nothing ended). Never throws: a failed write keeps its counts for the next flush.
   */
  flushOutcomes(): Promise<OutcomeFlush> {
    return this.outcomes.flush();
  }

  /**
   * A write that may have put a task in the ready index: 'task:readied' tells claimers sharing this
   * stream to forget which partitions they found empty, so they see the task at once (a task readied
   * by another process is seen within one poll interval).
   */
  protected async readied<T>(write: Promise<T>): Promise<T> {
    try {
      return await write;
    } finally {
      this.ctx.events.emit('task:readied', {});
    }
  }
}
