/**
 * The worker: admission and drain, for one execution environment (a Lambda environment, the local
 * stack's process). Each run() (worker-run.ts) claims while it has free slots and time, hands each
 * claimed task to the running tasks (running-tasks.ts), and before it returns aborts what still runs,
 * waits (bounded), releases what it still holds and clears every timer, because Lambda freezes the
 * process after the return and a frozen timer or handler would wake up inside a later invocation.
 * What it is told of work comes through its work source (run-options.ts) and the process's events
 * (work-signals.ts). What outlives a run is kept here: the claim memory, the running tasks, the pause
 * between polls, the burst it was offered.
 */
import { performance } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { systemClock, type Clock } from '../clock.js';
import { LeaseEvents } from '../events.js';
import { RecordingMetrics, type LeaseholdMetrics } from '../metrics.js';
import { ClaimState } from '../store/claim-state.js';
import type { DueTask } from '../store/delayed-reads.js';
import { BurstRefill } from './burst-refill.js';
import {
  WorkerBusyError,
  workerTypes,
  type RunOptions,
  type RunSummary,
  type WorkerOptions,
} from './run-options.js';
import { RunningTasks } from './running-tasks.js';
import { TimerSet } from './timers.js';
import { PollPause } from './work-signals.js';
import { WorkerRun, type WorkerParts } from './worker-run.js';
import { pausesOf } from './paused-types.js';

export {
  WorkerBusyError,
  type LookGate,
  type RunTimekeeper,
  type RunLimits,
  type RunOptions,
  type RunSummary,
  type WorkerConfig,
  type WorkerOptions,
  type WorkSource,
} from './run-options.js';

export class Worker {
  readonly timers: TimerSet;
  /** This worker's own steps (a child of the process's stream: they reach its subscribers too). */
  readonly events: LeaseEvents;
  readonly metrics: LeaseholdMetrics;
  private busy = false;
  private readonly clock: Clock;
  /**
   * What this worker's claims remember from one round to the next (spare heads, empty partitions,
   * contention, claims of unknown outcome to undo). It outlives run(): a Lambda execution environment
   * keeps its Worker, so the next invocation starts calm and still undoes what the last one left.
   */
  private readonly claimMemory = new ClaimState();
  private readonly parts: WorkerParts;

  constructor(private readonly options: WorkerOptions) {
    const clock = (this.clock = options.clock ?? systemClock());
    const timers = (this.timers = options.timers ?? new TimerSet());
    const processEvents = options.events ?? new LeaseEvents();
    const events = (this.events = processEvents.child());
    const logger = options.logger ?? new Logger({ serviceName: 'leasehold-worker' });
    logger.appendKeys({ workerId: options.workerId });
    this.metrics = options.metrics ?? new RecordingMetrics();
    const memory = this.claimMemory;
    const pause = new PollPause(timers, () => memory.forgetDrained());
    this.parts = {
      options,
      clock,
      timers,
      events,
      processEvents,
      logger,
      metrics: this.metrics,
      monotonic: options.monotonic ?? (() => performance.now()),
      types: options.types ?? workerTypes(options.config, options.registry),
      memory,
      pause,
      claimable: pausesOf(options.store, clock, options.config.pollIntervalMs),
      burst: new BurstRefill({
        memory,
        refillDue: options.refillDue,
        pollIntervalMs: options.config.pollIntervalMs,
        random: options.random ?? Math.random,
        logger,
      }),
      tasks: new RunningTasks({
        ...options,
        events,
        clock,
        timers,
        logger,
        onEnded: () => pause.interrupt(),
      }),
    };
  }

  /**
   * Delayed tasks known to fall due (a burst this run was started ahead of, or a burst its timekeeper
   * found due now): once due, this worker claims them straight from their delay partition, and it
   * stays up for them. What it cannot take is left to the promotion. Forgotten when the run returns.
   */
  offerDue(entries: readonly DueTask[], options: { steal?: boolean } = {}): void {
    if (entries.length === 0) return;
    this.claimMemory.offerDue(entries, this.options.random ?? Math.random, options);
    this.parts.burst.offered();
    if (entries.some((e) => e.dueAt <= this.clock.now())) this.parts.pause.wakeUp();
  }

  /** Tasks running now. */
  get running(): number {
    return this.parts.tasks.size;
  }

  async run(runOptions: RunOptions = {}): Promise<RunSummary> {
    // One run at a time: a second would share the claim memory and count every figure twice.
    if (this.busy) throw new WorkerBusyError(this.options.workerId);
    this.busy = true;
    try {
      return await new WorkerRun(this.parts, runOptions).run();
    } finally {
      this.busy = false;
    }
  }
}
