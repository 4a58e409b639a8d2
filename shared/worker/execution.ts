/**
 * One claimed task on its way through its handler to its outcome write. The lease keeper owns the
 * lease (renews it, says when it is lost or a cancel was requested); the execution runs the handler,
 * decides the outcome and writes it under the claim's token, so a handler that outlived its lease
 * cannot write over the task's new holder.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import {
  describeError,
  LeaseLostError,
  LeaseholdError,
  NonRetryableError,
  FlowsUnsupportedError,
  ValidationError,
  type InputProblem,
} from '../errors.js';
import type { FinishedStatus, LeaseEvents, OutcomeWriteKind } from '../events.js';
import type { Claimed } from '../store/claim.js';
import type { LeaseStore } from '../store/ports.js';
import type { Lease } from '../task-inputs.js';
import { addCost } from '../store/task-cost.js';
import { TaskStatus, type Task } from '../task-model.js';
import {
  WaitForChildren,
  type ChildTask,
  type TaskContext,
  type TaskDefinition,
  type TaskLogger,
} from '../tasks/define.js';
import type { KeptLease, LeaseKeeper } from './lease-keeper.js';
import { taskLog } from './task-log.js';
import {
  decideOutcome,
  TaskAbortedError,
  type AbortReason,
  type HandlerEnd,
  type OutcomeWrite,
} from './outcome.js';
import { sanitizeProgress } from './progress.js';
import type { TimerSet } from './timers.js';
import { FlowContext } from './flow-context.js';
import type { ChildView } from '../store/children-reads.js';

export interface ExecutionDeps {
  store: Pick<
    LeaseStore,
    | 'complete'
    | 'fail'
    | 'release'
    | 'finishCancel'
    | 'readSteps'
    | 'writeStep'
    | 'enqueueChildren'
    | 'waitForChildren'
    | 'readChildren'
  >;
  /** A child enqueued by a handler, checked against this deployment's types (tasks/task-checks.ts). */
  checkChild: (child: ChildTask) => { task: ChildTask; problems: InputProblem[] };
  keeper: LeaseKeeper;
  events: LeaseEvents;
  clock: Clock;
  timers: TimerSet;
  logger: Logger;
  /** The task's type, if this deployment knows it. */
  definition: TaskDefinition | undefined;
  /** How long the handler may run (effectiveTimeoutMs). */
  timeoutMs: number;
  /** How long a cancelled or timed-out handler gets to stop before its outcome is written anyway. */
  graceMs: number;
  /** Told about a failed attempt that went back to the queue with a backoff. */
  onRetryScheduled: (task: Task) => void;
}

export class Execution {
  readonly task: Task;
  private readonly kept: KeptLease;
  private readonly controller = new AbortController();
  private abortReason: AbortReason | undefined;
  private running: Promise<void> | undefined;
  private abandon!: () => void;
  private readonly abandoned = new Promise<HandlerEnd>(
    (resolve) => (this.abandon = () => resolve({ kind: 'abandoned' })),
  );
  private readonly logger: TaskLogger;
  private warnedProgress = false;
  private readonly flow: FlowContext;
  private readonly family: Claimed['family'];
  private children: ChildView[] = [];

  /** Hands the lease to the keeper, which renews it from its next round; the handler runs at start(). */
  constructor(
    private readonly deps: ExecutionDeps,
    claimed: Claimed,
  ) {
    this.task = claimed.task;
    this.family = claimed.family;
    this.kept = deps.keeper.track(claimed.lease, {
      lost: () => this.abort('lease-lost'),
      cancelRequested: () => this.abort('cancel-requested'),
    });
    // Never the payload: it may hold personal data.
    this.logger = taskLog(deps.logger, {
      taskId: this.task.id,
      taskType: this.task.type,
      attempt: this.task.attempts,
      token: claimed.lease.token,
    });
    const { store } = deps;
    this.flow = new FlowContext(
      store.readSteps && store.writeStep && store.enqueueChildren
        ? {
            readSteps: (task) => store.readSteps!(task),
            writeStep: (lease, name, result) => store.writeStep!(lease, name, result),
            enqueueChildren: (input) => store.enqueueChildren!(input),
          }
        : undefined,
      this.task,
      () => this.kept.lease,
      claimed.family,
      deps.checkChild,
      () => this.abort('lease-lost'),
    );
  }

  /** Runs the handler and writes the outcome; the same promise on every call. */
  start(): Promise<void> {
    this.running ??= this.run();
    return this.running;
  }

  abort(reason: AbortReason): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller.abort(new TaskAbortedError(reason));
    this.logger.info('task aborted', { reason });
    // A cancelled or timed-out handler gets a grace period to stop before its outcome is written anyway.
    if (reason === 'cancel-requested' || reason === 'timeout')
      this.deps.timers.timeout(() => this.abandon(), this.deps.graceMs);
  }

  /** Stops waiting for the handler (the worker is out of time); the outcome becomes a release. */
  stopWaiting(): void {
    this.abandon();
  }

  private async run(): Promise<void> {
    const started = this.deps.clock.now();
    const timeout = this.deps.timers.timeout(() => this.abort('timeout'), this.deps.timeoutMs);
    const handlerRun = this.runHandler(started);
    const end = await Promise.race([handlerRun, this.abandoned]);
    this.deps.timers.clear(timeout);
    await this.write(decideOutcome(end, this.abortReason, this.deps.timeoutMs), started);
    if (end.kind === 'abandoned') void this.afterAbandon(handlerRun, started);
  }

  private async runHandler(started: number): Promise<HandlerEnd> {
    const { definition } = this.deps;
    if (!definition)
      return {
        kind: 'rejected',
        error: new NonRetryableError(`no handler registered for task type "${this.task.type}"`),
        retryable: false,
      };
    const parsed = definition.schema.safeParse(this.task.payload);
    if (!parsed.success)
      return {
        kind: 'rejected',
        error: new NonRetryableError(`payload does not match the schema: ${parsed.error.message}`),
        retryable: false,
      };
    // A parent running again after its children ended reads them first (ctx.children).
    // Only the rounds it waited for (0..base-1): numbers past the base belong to a round an earlier
    // attempt enqueued and never waited for (it died first); this attempt enqueues them again.
    if (this.family && this.family.base > 0 && this.deps.store.readChildren) {
      try {
        this.children = await this.deps.store.readChildren(this.task, this.family.base);
      } catch (error) {
        return { kind: 'rejected', error, retryable: true };
      }
    }
    const marker = { taskId: this.task.id, token: this.kept.lease.token };
    this.deps.events.emit('handler:start', {
      ...marker,
      type: this.task.type,
      queueWaitMs: Math.max(0, started - this.task.availableAt),
    });
    try {
      return { kind: 'resolved', result: await definition.handler(parsed.data, this.context()) };
    } catch (error) {
      return { kind: 'rejected', error, retryable: !(error instanceof NonRetryableError) };
    } finally {
      this.deps.events.emit('handler:end', { ...marker, durationMs: this.deps.clock.now() - started });
    }
  }

  private context(): TaskContext {
    const signal = this.controller.signal;
    const previous =
      this.task.progress === undefined
        ? undefined
        : {
            progress: this.task.progress,
            ...(this.task.progressNote === undefined ? {} : { note: this.task.progressNote }),
          };
    return {
      taskId: this.task.id,
      attempt: this.task.attempts,
      token: this.kept.lease.token,
      signal,
      ...(previous ? { previous } : {}),
      heartbeat: () => this.kept.renewNow(),
      progress: (fraction, note) => {
        // Made fit to store here: a bad report used to fail the renewal of every lease on the worker.
        const report = sanitizeProgress(fraction, note);
        if (report) this.kept.report(report);
        else if (!this.warnedProgress) {
          this.warnedProgress = true;
          this.logger.warn('progress(NaN) ignored; the last reported progress stands');
        }
      },
      sleep: async (ms) => {
        await this.deps.timers.sleep(ms, signal);
        // Woken by the signal: the handler learns why, as fetch does.
        signal.throwIfAborted();
      },
      logger: this.logger,
      step: (name, fn) => this.flow.step(name, fn),
      enqueueChildren: (children) => this.flow.enqueueChildren(children),
      waitForChildren: () => this.flow.waitForChildren(),
      children: this.children,
    };
  }

  /** `refusedBefore`: this write replaces one the store refused as input (it is not replaced again). */
  private async write(outcome: OutcomeWrite, started: number, refusedBefore = false): Promise<void> {
    // From here the outcome write decides: renewals would only race it.
    const lease = this.kept.stopRenewing();
    const { events } = this.deps;
    const step = { taskId: this.task.id, token: lease.token, write: outcome.write };
    const answered = (result: 'ok' | 'refused' | 'error', status?: string) =>
      events.emit('write:answered', { ...step, outcome: result, ...(status ? { status } : {}) });
    const finished = (status: FinishedStatus, after: Task, error?: string) =>
      events.emit('task:finished', {
        taskId: this.task.id,
        type: this.task.type,
        status,
        by: 'worker',
        durationMs: this.deps.clock.now() - started,
        owner: after.owner,
        ...(after.cost ? { cost: after.cost } : {}),
        ...(error ? { error } : {}),
      });
    const progress = this.kept.progress;
    events.emit('write:sent', step);
    // The handler's time joins what this attempt cost, recorded on the task by the outcome write.
    const handlerMs = this.deps.clock.now() - started;
    try {
      const after = await this.send(outcome, withHandlerTime(lease, handlerMs), progress);
      answered('ok', after.status);
      const status = finishedStatus(outcome.write, after.status);
      finished(status, after, outcome.write === 'fail' ? outcome.error : undefined);
      if (status === 'RETRYING') this.deps.onRetryScheduled(after);
      if (outcome.write === 'fail')
        this.logger.warn('task attempt failed', { error: outcome.error, status: after.status });
    } catch (error) {
      if (error instanceof LeaseLostError) {
        answered('refused');
        this.logger.warn('outcome refused: the lease is no longer held', {
          outcome: outcome.write,
          current: error.current?.status,
        });
      } else if (
        error instanceof ValidationError &&
        (outcome.write === 'complete' || outcome.write === 'fail') &&
        !refusedBefore
      ) {
        // The store refused what the handler gave (a result over the size limit, say): record the
        // attempt as failed with the reason rather than leave the task RUNNING until recovery.
        answered('error');
        const retryable = outcome.write === 'fail' && outcome.retryable;
        await this.write({ write: 'fail', error: describeError(error), retryable }, started, true);
      } else {
        answered('error');
        // Unknown (deadline, throttling): the lease runs out and recovery decides.
        this.logger.error('outcome write failed; recovery will handle the task', {
          error: describeError(error),
          ...(error instanceof LeaseholdError ? { code: error.code } : {}),
        });
      }
    }
  }

  private send(
    outcome: OutcomeWrite,
    lease: KeptLease['lease'],
    progress: KeptLease['progress'],
  ): Promise<Task> {
    const { store } = this.deps;
    switch (outcome.write) {
      case 'complete':
        return store.complete({ lease, result: outcome.result ?? null });
      case 'fail':
        return store.fail({
          lease,
          error: outcome.error,
          retryable: outcome.retryable,
          ...(this.deps.definition?.backoff ? { backoff: this.deps.definition.backoff } : {}),
          ...(progress ? { progress } : {}),
        });
      case 'finish-cancel':
        return store.finishCancel({ lease });
      case 'release':
        return store.release({ lease, ...(progress ? { progress } : {}) });
      case 'wait-children':
        if (!store.waitForChildren) throw new FlowsUnsupportedError();
        return store.waitForChildren({ lease, childCount: this.flow.childCount });
    }
  }

  /** A handler that ignored its signal may still finish; its completion is tried, and the token refuses it. */
  private async afterAbandon(handlerRun: Promise<HandlerEnd>, started: number): Promise<void> {
    const late = await handlerRun;
    // A late wait is no result: the parent's children may still run, and only its holder may wait.
    if (late.kind !== 'resolved' || late.result instanceof WaitForChildren) return;
    this.logger.warn('abandoned handler finished late; trying its completion under the old token');
    await this.write({ write: 'complete', result: late.result }, started);
  }
}

/** Where the outcome write left the task, as the 'task:finished' event names it. */
function finishedStatus(write: OutcomeWriteKind, status: string): FinishedStatus {
  // Waiting, or ready again at once (its children had all ended): either way the attempt ended unspent.
  // A cancel requested meanwhile ends it CANCELLED instead, as it does a failure or a release.
  if (write === 'wait-children') return status === TaskStatus.CANCELLED ? 'CANCELLED' : 'WAITING_CHILDREN';
  if (write === 'release' && status === TaskStatus.QUEUED) return 'RELEASED';
  if (status === TaskStatus.QUEUED) return 'RETRYING';
  if (status === TaskStatus.SUCCESS || status === TaskStatus.FAILED || status === TaskStatus.CANCELLED)
    return status;
  return 'RELEASED';
}

function withHandlerTime(lease: Lease, handlerMs: number): Lease {
  return { ...lease, unrecorded: addCost(lease.unrecorded, { handlerMs }) };
}
