/**
 * What a worker is given: its settings, its collaborators, and per run its limits and its work
 * source, the port through which a deployment shape tells it about work. The Lambda fleet supplies
 * one (shared/fleet/fleet-invocation.ts: kicks, seats, the timekeeper), the local stack another
 * (tools/local/stack.ts: in-process wakes), tests a fake. The worker knows nothing of where its work
 * comes from beyond this port.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { settings, type LeaseholdConfig } from '../config.js';
import { ConfigError, LeaseholdError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import type { LeaseholdMetrics } from '../metrics.js';
import type { Candidate } from '../store/claim-state.js';
import type { DueTask } from '../store/delayed-reads.js';
import type { ClaimPlace } from '../store/claim-plan.js';
import type { LeaseStore } from '../store/ports.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { TimerSet } from './timers.js';

/** The settings a worker uses. */
export type WorkerConfig = Pick<
  LeaseholdConfig,
  | 'workerConcurrency'
  | 'workerTypes'
  | 'drainMarginMs'
  | 'idleStopMs'
  | 'pollIntervalMs'
  | 'heartbeatIntervalMs'
  | 'requestDeadlineMs'
  | 'maxExecutionMs'
>;

export interface WorkerOptions {
  store: LeaseStore;
  registry: TaskRegistry;
  config: WorkerConfig;
  workerId: string;
  /** Task types this worker serves (default: LEASEHOLD_WORKER_TYPES, else every registered type). */
  types?: string[];
  clock?: Clock;
  /** Every timer the worker and its executions arm (injectable: tests run on fake timers). */
  timers?: TimerSet;
  /**
   * The process's lifecycle stream: pass the store's (the runtime's `events`), so the worker hears of
   * tasks readied by writes in this process and one subscriber hears the store's and the worker's
   * steps. The worker emits on a child of it and counts its figures from its own steps only.
   */
  events?: LeaseEvents;
  logger?: Logger;
  metrics?: LeaseholdMetrics;
  /** Monotonic milliseconds for measuring event-loop lag (default performance.now). */
  monotonic?: () => number;
  /** How often a running worker sends its figures (default METRICS_FLUSH_INTERVAL_MS). */
  metricsFlushIntervalMs?: number;
  /**
   * Told after a claim round that filled every free slot: more work is likely waiting than this
   * worker can take (the fleet's scaler starts another invocation). `inBurst`: the work is a burst of
   * due delayed tasks this worker takes from the delay partitions (the new invocation should too).
   */
  onSaturated?: (context: { inBurst: boolean }) => void;
  /** Random numbers for the order in which offered due tasks are tried (default Math.random). */
  random?: () => number;
  /**
   * Reads the delayed tasks due by `now` (the fleet's: the delay partitions, keys only). A run that was
   * offered due tasks and took or lost all of them reads these again, at most once a poll interval,
   * and steals from them while the burst lasts, instead of reading every ready partition. Without it,
   * such a run goes back to reading the ready partitions.
   */
  refillDue?: (now: number) => Promise<readonly DueTask[]>;
  /**
   * The longest wait between an idle worker's rounds (poll-rules.ts, idlePollWait; never below the poll
   * interval). Default: eight intervals, at most a second. The local stack, where every writer wakes the
   * worker, lets a short interval back off to a second.
   */
  idlePollCeilingMs?: number;
}

/** How long a run may go, and what stops it. */
export interface RunLimits {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis); unbounded by default. */
  remainingTimeMs?: () => number;
  /** Return after this long with nothing claimed and nothing running (default LEASEHOLD_IDLE_STOP_MS; Infinity to never). */
  idleStopMs?: number;
  /** Aborting it stops claiming and drains (SIGTERM in the local stack). */
  stop?: AbortSignal;
}

/** The work-source port: what the deployment shape that started a run knows of its work. */
export interface WorkSource {
  /**
   * Many tasks fall due at this instant (the run was started ahead of them): stay up for it, look at
   * it, and look often for a moment after it, while the promotions land.
   */
  expectWorkAt?: number;
  /**
   * This run's place among the workers running now (in the fleet, its seat of the cap): its rounds
   * start at its own share of the partitions and read on to the next ones in turn, so workers that
   * start together (a burst, a scale-up) read different heads instead of racing for the same ones.
   * Without it, a hash of the worker id picks the start and the rest are read in random order.
   */
  place?: ClaimPlace;
  /** Partitions to read first in the first round (where the task that caused this run was enqueued). */
  lookFirst?: { type: string; shard: number }[];
  /** Ready tasks known by key (the task that caused this run): the first round takes them without a read. */
  offerReady?: Candidate[];
  /**
   * The process's owner of promotion for this run (worker/timekeeper.ts), on the worker's timers: the
   * fleet's seat 0 and the local stack pass one that reads the delay partitions. Started after the first
   * claim round, stopped before the run returns; the run stays up while it knows work due before the run
   * must end, and hands it the retries its tasks schedule. Without it the run keeps one of its own that
   * promotes only those retries (and stays up for the ones due within the idle window).
   */
  timekeeper?: RunTimekeeper;
  /**
   * Called once when a type this worker serves can no longer be claimed (the time left no longer fits
   * its timeout: the run's claim window for it closed); from then on the run claims nothing and only
   * drains. The source gives the run's place to a successor that can claim every type (at once when
   * `backlog`: a round of this run filled every free slot). Without it, a run claims what still fits.
   */
  onClaimingOver?: (context: { backlog: boolean }) => void;
  /**
   * Whether a poll is worth reading the ready partitions for (the fleet: one read of its own seat, not
   * 17 queries a type). Asked only when nothing else says to read: the run's first round, a round that
   * filled every free slot, and work readied in this process always read. Without it, every poll reads.
   */
  lookGate?: LookGate;
  /**
   * Return as soon as nothing runs and nothing offered waits, without a last poll (a run handed its
   * tasks by key: the source learns of other work by its own means when the run ends).
   */
  returnWhenIdle?: boolean;
}

export interface RunOptions extends RunLimits, WorkSource {}

/** Answers an idle poll's question: did work arrive that only a read of the ready partitions finds? */
export interface LookGate {
  shouldRead(): Promise<boolean>;
}

/** What a run uses of its timekeeper (worker/timekeeper.ts). */
export interface RunTimekeeper {
  start(): void;
  stop(): Promise<void>;
  /** Whether it knows a task falling due within `ms`. */
  dueWithin(ms: number): boolean;
  /** A retry this run scheduled falls due at `dueAt`. */
  expect(id: string, dueAt: number): void;
  /** Retries told of by expect() and not yet promoted. */
  readonly expectedWaiting: number;
  /** When it last promoted a task (0: never). */
  readonly promotedAt: number;
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
  /** Retries this run scheduled that were not yet due when it returned (someone must promote them). */
  retriesWaiting: number;
}

/** A run's figures before it has done anything. */
export function emptyRunSummary(): RunSummary {
  return {
    claimed: 0,
    lostRaces: 0,
    heartbeatRounds: 0,
    maxEventLoopLagMs: 0,
    stoppedBecause: 'idle',
    timersArmed: 0,
    retriesWaiting: 0,
  };
}

/** run() was called while a run of the same worker was still going. */
export class WorkerBusyError extends LeaseholdError {
  override name = 'WorkerBusyError';
  override readonly code = 'WORKER_BUSY';
  constructor(readonly workerId: string) {
    super(`Worker ${workerId} is already running; await its run() before starting another.`);
  }
}

/** The types a worker serves: LEASEHOLD_WORKER_TYPES (a dedicated pool), or every registered type. */
export function workerTypes(config: WorkerConfig, registry: TaskRegistry): string[] {
  if (config.workerTypes === undefined) return registry.names();
  const types = config.workerTypes.split(',');
  const unknown = types.filter((t) => !registry.get(t));
  if (unknown.length > 0)
    throw new ConfigError([
      {
        path: settings.workerTypes.env,
        message: `unknown task types ${unknown.join(', ')}; registered: ${registry.names().join(', ')}`,
      },
    ]);
  return types;
}
