/**
 * One claimed task on its way through its handler to its outcome write. The worker's heartbeat
 * updates `lease` and aborts the signal; the execution decides and writes the outcome under the
 * claim's token, so a handler that outlived its lease cannot write over the task's new holder.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import { LeaseLostError } from '../errors.js';
import type { Claimed } from '../store/claim.js';
import type { Lease } from '../store/inputs.js';
import type { TaskStore } from '../store/task-store.js';
import { TaskStatus, type Task } from '../task-model.js';
import { NonRetryableError, type TaskContext, type TaskDefinition } from '../tasks/define.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { LeaseholdMetrics } from './metrics.js';
import { decideOutcome, describeError, type AbortReason, type HandlerEnd, type OutcomeWrite } from './outcome.js';
import type { TimerSet } from './timers.js';
import type { HistorySink } from './history.js';
import { sanitizeProgress, type Progress } from './progress.js';
import { effectiveTimeoutMs } from '../invocation-budget.js';

/** The reason a handler's signal carries. */
export class TaskAbortedError extends Error {
  override name = 'TaskAbortedError';
  constructor(readonly reason: AbortReason) {
    super(`task aborted: ${reason}`);
  }
}

export interface ExecutionDeps {
  store: TaskStore;
  registry: TaskRegistry;
  config: LeaseholdConfig;
  clock: Clock;
  timers: TimerSet;
  metrics: LeaseholdMetrics;
  logger: Logger;
  /** Renews this execution's lease at once (TaskContext.heartbeat). */
  renewNow: (execution: Execution) => Promise<void>;
  /** Told about a failed attempt that went back to the queue with a backoff. */
  onDelayedRetry: (task: Task) => void;
  history?: HistorySink;
}

export class Execution {
  readonly task: Task;
  lease: Lease;
  progress: Progress | undefined;
  private warnedProgress = false;
  /** The lease is known to be gone: stop renewing it. */
  leaseLost = false;
  /** The outcome write has begun: renewals would only race it. */
  finishing = false;
  abortReason: AbortReason | undefined;
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private abandon!: () => void;
  private readonly abandoned = new Promise<HandlerEnd>((resolve) => (this.abandon = () => resolve({ kind: 'abandoned' })));
  private readonly logger: Logger;
  readonly timeoutMs: number;
  private readonly definition: TaskDefinition | undefined;

  constructor(
    private readonly deps: ExecutionDeps,
    claimed: Claimed,
  ) {
    this.task = claimed.task;
    this.lease = claimed.lease;
    this.definition = deps.registry.get(this.task.type);
    this.timeoutMs = effectiveTimeoutMs(this.task.timeoutMs, this.definition?.timeoutMs, deps.config);
    this.logger = deps.logger.createChild();
    // Never the payload: it may hold personal data.
    this.logger.appendKeys({ taskId: this.task.id, taskType: this.task.type, attempt: this.task.attempts, token: this.lease.token });
    this.done = this.run();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  abort(reason: AbortReason): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller.abort(new TaskAbortedError(reason));
    this.logger.info('task aborted', { reason });
    // A cancelled or timed-out handler gets one heartbeat interval to stop before its outcome is written anyway.
    if (reason === 'cancel-requested' || reason === 'timeout') this.deps.timers.timeout(() => this.abandon(), this.deps.config.heartbeatIntervalMs);
  }

  /** Stops waiting for the handler (the worker is out of time); the outcome becomes a release. */
  stopWaiting(): void {
    this.abandon();
  }

  private async run(): Promise<void> {
    const started = this.deps.clock.now();
    this.deps.metrics.timing('QueueWait', Math.max(0, started - this.task.availableAt));
    const timeout = this.deps.timers.timeout(() => this.abort('timeout'), this.timeoutMs);
    const handlerRun = this.runHandler();
    const end = await Promise.race([handlerRun, this.abandoned]);
    this.deps.timers.clear(timeout);
    await this.write(decideOutcome(end, this.abortReason, this.timeoutMs));
    this.deps.metrics.timing('TaskDuration', this.deps.clock.now() - started);
    if (end.kind === 'abandoned') void this.afterAbandon(handlerRun);
  }

  private async runHandler(): Promise<HandlerEnd> {
    if (!this.definition) return { kind: 'rejected', error: new NonRetryableError(`no handler registered for task type "${this.task.type}"`), retryable: false };
    const parsed = this.definition.schema.safeParse(this.task.payload);
    if (!parsed.success) return { kind: 'rejected', error: new NonRetryableError(`payload does not match the schema: ${parsed.error.message}`), retryable: false };
    const context: TaskContext = {
      taskId: this.task.id,
      attempt: this.task.attempts,
      token: this.lease.token,
      signal: this.controller.signal,
      heartbeat: () => this.deps.renewNow(this),
      progress: (fraction, note) => {
        // Made fit to store here: a bad report used to fail the renewal of every lease on the worker.
        const report = sanitizeProgress(fraction, note);
        if (report) this.progress = report;
        else if (!this.warnedProgress) {
          this.warnedProgress = true;
          this.logger.warn('progress(NaN) ignored; the last reported progress stands');
        }
      },
      logger: {
        debug: (message, extra) => this.logger.debug(message, extra ?? {}),
        info: (message, extra) => this.logger.info(message, extra ?? {}),
        warn: (message, extra) => this.logger.warn(message, extra ?? {}),
        error: (message, extra) => this.logger.error(message, extra ?? {}),
      },
    };
    const marker = { task: this.task.id, token: this.lease.token };
    this.deps.history?.record({ ev: 'start', ...marker });
    try {
      return { kind: 'resolved', result: await this.definition.handler(parsed.data, context) };
    } catch (error) {
      return { kind: 'rejected', error, retryable: !(error instanceof NonRetryableError) };
    } finally {
      this.deps.history?.record({ ev: 'end', ...marker });
    }
  }

  private async write(outcome: OutcomeWrite): Promise<void> {
    this.finishing = true;
    const { store, metrics } = this.deps;
    const record = (result: 'sent' | 'ok' | 'refused' | 'error', status?: string) =>
      this.deps.history?.record({ ev: 'write', task: this.task.id, token: this.lease.token, write: outcome.write, outcome: result, ...(status ? { status } : {}) });
    record('sent');
    try {
      switch (outcome.write) {
        case 'complete':
          record('ok', (await store.complete({ lease: this.lease, result: outcome.result ?? null })).status);
          metrics.count('TasksSucceeded');
          break;
        case 'fail': {
          const after = await store.fail({ lease: this.lease, error: outcome.error, retryable: outcome.retryable, ...(this.definition?.backoff ? { backoff: this.definition.backoff } : {}) });
          record('ok', after.status);
          metrics.count(after.status === TaskStatus.QUEUED ? 'TasksRetried' : after.status === TaskStatus.CANCELLED ? 'TasksCancelled' : 'TasksFailed');
          if (after.status === TaskStatus.QUEUED) this.deps.onDelayedRetry(after);
          this.logger.warn('task attempt failed', { error: outcome.error, status: after.status });
          break;
        }
        case 'finish-cancel':
          record('ok', (await store.finishCancel({ lease: this.lease })).status);
          metrics.count('TasksCancelled');
          break;
        case 'release':
          record('ok', (await store.release({ lease: this.lease })).status);
          metrics.count('TasksReleased');
          break;
      }
    } catch (error) {
      if (error instanceof LeaseLostError) {
        record('refused');
        metrics.count('LateCompletionsRejected');
        this.logger.warn('outcome refused: the lease is no longer held', { outcome: outcome.write, current: error.current?.status });
      } else if (error instanceof Error && error.name === 'ValidationError') {
        // e.g. a result over the size limit: record the attempt as failed rather than losing it.
        await this.write({ write: 'fail', error: describeError(error), retryable: false });
      } else {
        record('error');
        // Unknown (deadline, throttling): the lease runs out and recovery decides.
        this.logger.error('outcome write failed; recovery will handle the task', { error: describeError(error) });
      }
    }
  }

  /** A handler that ignored its signal may still finish; its completion is tried, and the token refuses it. */
  private async afterAbandon(handlerRun: Promise<HandlerEnd>): Promise<void> {
    const late = await handlerRun;
    if (late.kind !== 'resolved') return;
    this.logger.warn('abandoned handler finished late; trying its completion under the old token');
    await this.write({ write: 'complete', result: late.result });
  }
}
