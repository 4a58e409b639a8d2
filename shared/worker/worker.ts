/**
 * The worker runtime: claims while it has free slots and time, renews every lease it holds from one
 * timer, and before it returns aborts what still runs, waits (bounded), releases what it still holds
 * and clears every timer, because Lambda freezes the process after the return and a frozen timer or
 * handler would wake up inside a later invocation.
 */
import { performance } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { systemClock, type Clock } from '../clock.js';
import { settings, type LeaseholdConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import type { TaskStore } from '../store/task-store.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { Task } from '../task-model.js';
import { Execution } from './execution.js';
import { describeError } from './outcome.js';
import { METRICS_FLUSH_INTERVAL_MS, RecordingMetrics, type LeaseholdMetrics } from './metrics.js';
import { TimerSet } from './timers.js';
import { renewRound } from './renewal-round.js';
import { canStartWithin, typeTimeoutMs } from '../invocation-budget.js';
import type { HistorySink } from './history.js';

export interface WorkerOptions {
  store: TaskStore;
  registry: TaskRegistry;
  config: LeaseholdConfig;
  workerId: string;
  /** Task types this worker serves (default: every registered type). */
  types?: string[];
  clock?: Clock;
  logger?: Logger;
  metrics?: LeaseholdMetrics;
  /** Monotonic milliseconds for measuring event-loop lag (default performance.now). */
  monotonic?: () => number;
  /** Records every lease-path step (chaos testing, audits). */
  history?: HistorySink;
  /** How often a running worker sends its figures (default METRICS_FLUSH_INTERVAL_MS). */
  metricsFlushIntervalMs?: number;
}

export interface RunOptions {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis); unbounded by default. */
  remainingTimeMs?: () => number;
  /** Return after this long with nothing claimed and nothing running (default LEASEHOLD_IDLE_STOP_MS; Infinity to never). */
  idleStopMs?: number;
  /** Aborting it stops claiming and drains (SIGTERM in the local stack). */
  stop?: AbortSignal;
}

export interface RunSummary {
  claimed: number;
  lostRaces: number;
  heartbeatRounds: number;
  /** Largest delay of the heartbeat timer behind its schedule: a blocked event loop shows here. */
  maxEventLoopLagMs: number;
  stoppedBecause: 'stop-signal' | 'deadline' | 'idle';
  /** Timers still armed when run() returned: always 0. */
  timersArmed: number;
}

/** The types a worker serves: LEASEHOLD_WORKER_TYPES (a dedicated pool), or every registered type. */
function workerTypes(config: LeaseholdConfig, registry: TaskRegistry): string[] {
  if (config.workerTypes === undefined) return registry.names();
  const types = config.workerTypes.split(',');
  const unknown = types.filter((t) => !registry.get(t));
  if (unknown.length > 0) throw new ConfigError([{ path: settings.workerTypes.env, message: `unknown task types ${unknown.join(', ')}; registered: ${registry.names().join(', ')}` }]);
  return types;
}

export class Worker {
  readonly timers = new TimerSet();
  private readonly active = new Map<string, Execution>();
  /** Retries this worker will promote when their backoff ends (task id -> due time): work it knows is coming. */
  private readonly pendingPromotions = new Map<string, number>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly metrics: LeaseholdMetrics;
  private readonly monotonic: () => number;
  private readonly types: string[];
  private renewal: Promise<void> | undefined;
  /** When this worker last promoted a retry to the ready index (0: never). */
  private promotedAt = 0;
  private wake: (() => void) | undefined;
  private summary!: RunSummary;

  constructor(private readonly options: WorkerOptions) {
    this.clock = options.clock ?? systemClock();
    this.logger = options.logger ?? new Logger({ serviceName: 'leasehold-worker' });
    this.logger.appendKeys({ workerId: options.workerId });
    this.metrics = options.metrics ?? new RecordingMetrics();
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.types = options.types ?? workerTypes(options.config, options.registry);
  }

  /** Tasks running now. */
  get running(): number {
    return this.active.size;
  }

  async run(runOptions: RunOptions = {}): Promise<RunSummary> {
    const { config } = this.options;
    const remaining = runOptions.remainingTimeMs ?? (() => Number.POSITIVE_INFINITY);
    const idleStopMs = runOptions.idleStopMs ?? config.idleStopMs;
    this.summary = { claimed: 0, lostRaces: 0, heartbeatRounds: 0, maxEventLoopLagMs: 0, stoppedBecause: 'idle', timersArmed: 0 };
    const onStop = () => this.wake?.();
    runOptions.stop?.addEventListener('abort', onStop);
    this.startHeartbeat();
    try {
      let idleSince = this.clock.now();
      for (;;) {
        if (runOptions.stop?.aborted) {
          this.summary.stoppedBecause = 'stop-signal';
          break;
        }
        const left = remaining();
        if (left <= config.drainMarginMs) {
          this.summary.stoppedBecause = 'deadline';
          break;
        }
        // Only types whose timeout still fits in this invocation, with the drain margin to spare. A task
        // never runs longer than its type allows (effectiveTimeoutMs), so what is claimed here can finish.
        const claimable = this.types.filter((type) => canStartWithin(left, this.timeoutOf(type), config));
        const free = config.workerConcurrency - this.active.size;
        if (claimable.length === 0 && this.active.size === 0) {
          this.summary.stoppedBecause = 'deadline';
          break;
        }
        if (free > 0 && claimable.length > 0 && (await this.claim(claimable, free)) > 0) {
          idleSince = this.clock.now();
          continue;
        }
        // A promotion that finished during the last round made work that round could not see yet.
        idleSince = Math.max(idleSince, this.promotedAt);
        // A retry due within the idle window is work on its way; a long backoff is left to the next invocation.
        if (this.active.size > 0 || this.retryDueWithin(idleStopMs)) idleSince = this.clock.now();
        else if (this.clock.now() - idleSince >= idleStopMs) {
          this.summary.stoppedBecause = 'idle';
          break;
        }
        // Sleep until the next poll, a finished task, a stop, or the start of the drain margin.
        await this.pause(Math.max(0, Math.min(config.pollIntervalMs, left - config.drainMarginMs)));
      }
      await this.drain();
    } finally {
      runOptions.stop?.removeEventListener('abort', onStop);
      this.timers.clearAll();
      this.summary.timersArmed = this.timers.armed;
      this.metrics.flush();
    }
    return this.summary;
  }

  private retryDueWithin(ms: number): boolean {
    const now = this.clock.now();
    for (const due of this.pendingPromotions.values()) if (due - now <= ms) return true;
    return false;
  }

  private timeoutOf(type: string): number {
    return typeTimeoutMs(this.options.registry.get(type)?.timeoutMs, this.options.config);
  }

  private async claim(types: string[], free: number): Promise<number> {
    const { store, config, workerId } = this.options;
    try {
      const round = await store.claim({ workerId, types, max: free });
      this.summary.claimed += round.claimed.length;
      this.summary.lostRaces += round.lostRaces;
      this.metrics.count('Claims', round.claimed.length);
      for (const fix of round.recovered) this.options.history?.record({ ev: 'recover', task: fix.taskId, token: fix.token, leaseUntil: fix.leaseUntil, action: fix.action });
      this.metrics.count('WastedClaimWrites', round.lostRaces);
      for (const claimed of round.claimed) {
        this.options.history?.record({ ev: 'claim', task: claimed.task.id, token: claimed.lease.token, leaseUntil: claimed.lease.leaseUntil });
        const execution = new Execution(
          { store, registry: this.options.registry, config, clock: this.clock, timers: this.timers, metrics: this.metrics, logger: this.logger, renewNow: (e) => this.renew([e]), onDelayedRetry: (task) => this.promoteWhenDue(task), ...(this.options.history ? { history: this.options.history } : {}) },
          claimed,
        );
        this.active.set(claimed.task.id, execution);
        void execution.done
          .catch((error: unknown) => this.logger.error('task execution failed', { taskId: claimed.task.id, error: describeError(error) }))
          .finally(() => {
            this.active.delete(claimed.task.id);
            this.wake?.();
          });
      }
      return round.claimed.length;
    } catch (error) {
      this.logger.error('claim failed', { error: describeError(error) });
      return 0;
    }
  }

  /**
   * A retry this worker scheduled is promoted to the ready index by this worker when it falls due, with
   * one write by key and no query; if the worker is gone by then, the recovery sweep promotes it.
   */
  private promoteWhenDue(task: Task): void {
    this.pendingPromotions.set(task.id, task.availableAt);
    // Timers may fire a little before the wall clock says the time has come: aim just past it, and
    // look again if the store still found the task not yet due. A timer that fires early by this
    // worker's own clock re-arms without a write, so no timer fault can turn into a loop of writes
    // (a backoff past Node's timer limit once fired every millisecond; TimerSet now steps it).
    this.timers.timeout(() => {
      if (this.clock.now() < task.availableAt) return this.promoteWhenDue(task);
      this.options.store
        .promote({ id: task.id })
        .then((promoted) => {
          if (promoted) {
            this.metrics.count('DelayedPromoted');
            this.promotedAt = this.clock.now();
          }
          else if (this.clock.now() < task.availableAt) return this.promoteWhenDue(task);
          this.pendingPromotions.delete(task.id);
        })
        .catch((error: unknown) => {
          this.pendingPromotions.delete(task.id);
          this.logger.warn('promotion failed; recovery will promote the task', { error: describeError(error) });
        })
        .finally(() => this.wake?.());
    }, Math.max(0, task.availableAt - this.clock.now()) + 5);
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.timers.timeout(() => done(), ms);
      const done = () => {
        this.timers.clear(timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
    });
  }

  private startHeartbeat(): void {
    const interval = this.options.config.heartbeatIntervalMs;
    let expected = this.monotonic() + interval;
    let flushedAt = this.monotonic();
    this.timers.interval(() => {
      const now = this.monotonic();
      // Figures go out while a long invocation runs, not only at its end: alarms need them each minute,
      // and an invocation Lambda kills at its timeout never reaches the end.
      if (now - flushedAt >= (this.options.metricsFlushIntervalMs ?? METRICS_FLUSH_INTERVAL_MS)) {
        flushedAt = now;
        this.metrics.flush();
      }
      const lag = Math.max(0, now - expected);
      expected = now + interval;
      this.summary.maxEventLoopLagMs = Math.max(this.summary.maxEventLoopLagMs, Math.round(lag));
      this.metrics.timing('EventLoopLag', Math.round(lag));
      if (lag > interval) this.logger.warn('event loop blocked past a heartbeat interval; a CPU-bound handler should call heartbeat()', { lagMs: Math.round(lag) });
      // One round at a time: a slow round is not stacked on by the next tick.
      if (!this.renewal) void this.renew([...this.active.values()]);
    }, interval);
  }

  /** One renewal round over the given executions; applies lost leases and cancel requests to their signals. */
  private async renew(executions: Execution[]): Promise<void> {
    while (this.renewal) await this.renewal.catch(() => undefined);
    const live = executions.filter((e) => !e.leaseLost && !e.finishing);
    if (live.length === 0) return;
    const round = (async () => {
      this.summary.heartbeatRounds++;
      const progress = Object.fromEntries(live.flatMap((e) => (e.progress ? [[e.task.id, e.progress]] : [])));
      // One answer per lease even when the round fails as a whole, so every lease reaches the switch below.
      const outcomes = await renewRound(this.options.store, live.map((e) => e.lease), progress, this.logger);
      let ok = 0;
      for (const [i, outcome] of outcomes.entries()) {
        const execution = live[i]!;
        if (this.active.get(execution.task.id) !== execution) continue; // finished while the round ran
        this.options.history?.record({
          ev: 'renew',
          task: outcome.taskId,
          token: execution.lease.token,
          outcome: outcome.outcome,
          ...('lease' in outcome ? { leaseUntil: outcome.lease.leaseUntil } : {}),
        });
        switch (outcome.outcome) {
          case 'renewed':
          case 'cancel-requested':
            ok++;
            if (!execution.finishing) execution.lease = outcome.lease;
            if (outcome.outcome === 'cancel-requested') execution.abort('cancel-requested');
            break;
          case 'lost':
            if (execution.finishing) break; // our own outcome write got there first
            execution.leaseLost = true;
            this.metrics.count('LeasesLost');
            execution.abort('lease-lost');
            break;
          case 'error':
            this.logger.warn('lease renewal failed', { taskId: outcome.taskId, error: describeError(outcome.error) });
            // Unknown whether we still hold it: once our own view says it ran out, stop the handler.
            if (!execution.finishing && this.clock.now() >= execution.lease.leaseUntil) {
              execution.leaseLost = true;
              this.metrics.count('LeasesLost');
              execution.abort('lease-lost');
            }
            break;
        }
      }
      this.metrics.count('LeaseRenewals', outcomes.length);
      this.metrics.count('LeaseRenewalsOk', ok);
    })();
    this.renewal = round;
    try {
      await round;
    } catch (error) {
      this.logger.error('renewal round failed', { error: describeError(error) });
    } finally {
      this.renewal = undefined;
    }
  }

  /** Abort what runs, wait for it (bounded), and make the stragglers give their leases back. */
  private async drain(): Promise<void> {
    const executions = [...this.active.values()];
    if (executions.length === 0) return;
    for (const e of executions) e.abort('shutdown');
    const waitMs = Math.max(0, this.options.config.drainMarginMs - 2 * this.options.config.requestDeadlineMs);
    const all = Promise.all(executions.map((e) => e.done));
    await Promise.race([all, this.timers.sleep(waitMs)]);
    for (const e of executions) e.stopWaiting();
    await all;
    if (this.renewal) await this.renewal.catch(() => undefined);
  }
}
