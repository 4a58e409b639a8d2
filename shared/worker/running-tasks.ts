/**
 * The tasks a worker runs now: each an Execution holding its lease, watched until it ends, and all of
 * them drained (aborted, waited for within the drain margin, made to give their leases back) before a
 * run returns.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import { checkTask } from '../tasks/task-checks.js';
import type { LeaseEvents } from '../events.js';
import { effectiveTimeoutMs } from '../invocation-budget.js';
import type { Claimed } from '../store/claim.js';
import type { LeaseStore } from '../store/ports.js';
import type { TaskRegistry } from '../tasks/registry.js';
import { Execution } from './execution.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { RunTimekeeper, WorkerConfig } from './run-options.js';
import type { TimerSet } from './timers.js';

export interface RunningTasksDeps {
  store: LeaseStore;
  registry: TaskRegistry;
  config: WorkerConfig;
  events: LeaseEvents;
  clock: Clock;
  timers: TimerSet;
  logger: Logger;
  /** A task ended: the worker has a free slot again. */
  onEnded: () => void;
}

export class RunningTasks {
  private readonly active = new Map<string, Execution>();

  constructor(private readonly deps: RunningTasksDeps) {}

  get size(): number {
    return this.active.size;
  }

  /** Starts a claimed task under the run's lease keeper; its retry is the run's timekeeper's to promote. */
  start(claimed: Claimed, run: { keeper: LeaseKeeper; timekeeper: RunTimekeeper }): void {
    const { store, config, registry, events, logger } = this.deps;
    const { task, lease } = claimed;
    events.emit('claim:won', {
      taskId: task.id,
      type: task.type,
      token: lease.token,
      leaseUntil: lease.leaseUntil,
      attempt: task.attempts,
      startedAt: task.startedAt ?? lease.leaseUntil,
    });
    const definition = registry.get(task.type);
    const execution = new Execution(
      {
        store,
        keeper: run.keeper,
        events,
        clock: this.deps.clock,
        timers: this.deps.timers,
        logger,
        definition,
        checkChild: (child) => checkTask(registry, config, child, child.payload ?? null),
        timeoutMs: effectiveTimeoutMs(task.timeoutMs, definition?.timeoutMs, config),
        graceMs: config.heartbeatIntervalMs,
        onRetryScheduled: (retry) => run.timekeeper.expect(retry.id, retry.availableAt),
      },
      claimed,
    );
    this.active.set(task.id, execution);
    void execution
      .start()
      .catch((error: unknown) =>
        logger.error('task execution failed', { taskId: task.id, error: describeError(error) }),
      )
      .finally(() => {
        // A re-claim of the same task (its old handler ignored a lost lease) may be running now.
        if (this.active.get(task.id) === execution) this.active.delete(task.id);
        this.deps.onEnded();
      });
  }

  /** Abort what runs, wait for it (bounded by the drain margin), and make the stragglers give their leases back. */
  async drain(): Promise<void> {
    const executions = [...this.active.values()];
    if (executions.length === 0) return;
    for (const e of executions) e.abort('shutdown');
    const { drainMarginMs, requestDeadlineMs } = this.deps.config;
    const all = Promise.all(executions.map((e) => e.start()));
    await Promise.race([all, this.deps.timers.sleep(Math.max(0, drainMarginMs - 2 * requestDeadlineMs))]);
    for (const e of executions) e.stopWaiting();
    await all;
  }
}
