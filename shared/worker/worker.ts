/**
 * The worker: admission and drain. It claims while it has free slots and time, hands each claimed
 * task to an Execution, and before it returns aborts what still runs, waits (bounded), releases what
 * it still holds and clears every timer, because Lambda freezes the process after the return and a
 * frozen timer or handler would wake up inside a later invocation. Leases are the LeaseKeeper's,
 * delayed retries the RetryPromoter's, figures the lifecycle subscribers', outcome counters the store's
 * (flushed from here: outcome-flushes.ts).
 */
import { performance } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { systemClock, type Clock } from '../clock.js';
import { settings, type LeaseholdConfig } from '../config.js';
import { ConfigError, describeError, LeaseholdError } from '../errors.js';
import { LeaseEvents } from '../events.js';
import { canStartWithin, effectiveTimeoutMs, typeTimeoutMs } from '../invocation-budget.js';
import { ClaimState, type Candidate } from '../store/claim-state.js';
import { shardForId } from '../table-layout.js';
import type { LeaseStore } from '../store/ports.js';
import type { Claimed } from '../store/claim.js';
import type { DueTask } from '../store/delayed-reads.js';
import type { TaskRegistry } from '../tasks/registry.js';
import { Execution } from './execution.js';
import { LeaseKeeper } from './lease-keeper.js';
import { countLifecycle } from './lifecycle-metrics.js';
import { METRICS_FLUSH_INTERVAL_MS, RecordingMetrics, type LeaseholdMetrics } from '../metrics.js';
import { flushOutcomesEvery } from './outcome-flushes.js';
import { RetryPromoter } from './retry-promoter.js';
import { TimerSet } from './timers.js';
import { expectingWork, idlePollWait, pollWait } from './poll-rules.js';

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

export interface RunOptions {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis); unbounded by default. */
  remainingTimeMs?: () => number;
  /** Return after this long with nothing claimed and nothing running (default LEASEHOLD_IDLE_STOP_MS; Infinity to never). */
  idleStopMs?: number;
  /** Aborting it stops claiming and drains (SIGTERM in the local stack). */
  stop?: AbortSignal;
  /**
   * Many tasks fall due at this instant (the timekeeper started this run ahead of them): stay up for
   * it, look at it, and look often for a moment after it, while the promotions land.
   */
  expectWorkAt?: number;
  /** Partitions to read first in the first round (where the task that caused this run was enqueued). */
  lookFirst?: { type: string; shard: number }[];
  /** Ready tasks known by key (the task that caused this run): the first round takes them without a read. */
  offerReady?: Candidate[];
  /**
   * Work this run does beside claiming, on the worker's timers (the fleet's timekeeper): started with
   * the run, stopped before it returns, and the run stays up while it knows work due before the run must end.
   */
  duty?: RunDuty;
  /**
   * Called once when a type this worker serves can no longer be claimed (the time left no longer fits
   * its timeout: the invocation's claim window for it closed); from then on the run claims nothing and
   * only drains. The fleet gives its seat to a successor that can claim every type (started at once
   * when `backlog`: a round of this run filled every free slot), instead of holding it until the
   * slowest task ends while work of that type waits. Without it, a run claims what still fits.
   */
  onClaimingOver?: (context: { backlog: boolean }) => void;
  /**
   * Whether a poll is worth reading the ready partitions for (the fleet: one read of the invocation's own seat, not 17
   * queries a type). Asked only when nothing else says to read: the run's first round, a round that
   * filled every free slot, and work readied in this process always read. Without it, every poll reads.
   */
  lookGate?: LookGate;
  /**
   * Return as soon as nothing runs and nothing offered waits, without a last poll (a kick's run, handed
   * its tasks by key: its fleet invocation learns of a ring it did not read for when it gives its seat back).
   */
  returnWhenIdle?: boolean;
}

/** Answers an idle poll's question: did work arrive that only a read of the ready partitions finds? */
export interface LookGate {
  shouldRead(): Promise<boolean>;
}

export interface RunDuty {
  start(): void;
  stop(): Promise<void>;
  dueWithin(ms: number): boolean;
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

/** run() was called while a run of the same worker was still going. */
export class WorkerBusyError extends LeaseholdError {
  override name = 'WorkerBusyError';
  override readonly code = 'WORKER_BUSY';
  constructor(readonly workerId: string) {
    super(`Worker ${workerId} is already running; await its run() before starting another.`);
  }
}

/** The types a worker serves: LEASEHOLD_WORKER_TYPES (a dedicated pool), or every registered type. */
function workerTypes(config: WorkerConfig, registry: TaskRegistry): string[] {
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

/** In-process enqueues whose partition hint a worker took (each goes to one worker; see runOnce). */
const hintsTaken = new WeakSet<object>();

/** What one run() owns: the leases it holds, the retries it will promote, its figures. */
interface Run {
  keeper: LeaseKeeper;
  promoter: RetryPromoter;
  summary: RunSummary;
}

export class Worker {
  readonly timers: TimerSet;
  /** This worker's own steps (a child of the process's stream: they reach its subscribers too). */
  readonly events: LeaseEvents;
  readonly metrics: LeaseholdMetrics;
  /** The process's stream, where the store says it readied a task. */
  private readonly processEvents: LeaseEvents;
  private busy = false;
  private readonly active = new Map<string, Execution>();
  /**
   * What this worker's claims remember from one round to the next (spare heads, empty partitions,
   * contention, claims of unknown outcome to undo). It outlives run(): a Lambda execution environment
   * keeps its Worker, so the next invocation starts calm and still undoes what the last one left.
   */
  private readonly claimMemory = new ClaimState();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly monotonic: () => number;
  private readonly types: string[];
  private wake: (() => void) | undefined;
  /** A task was readied while no pause was waiting: the next pause looks again at once instead. */
  private lookAgainPending = false;
  /**
   * Due tasks were offered and the burst may still have entries this worker could take (cleared when a
   * refill finds none due, and when the run returns).
   */
  private inBurst = false;
  /** When this run last read the delay partitions for more of the burst, and what it won since. */
  private refilledAt = Number.NEGATIVE_INFINITY;
  private wonSinceRefill = 0;

  constructor(private readonly options: WorkerOptions) {
    this.clock = options.clock ?? systemClock();
    this.timers = options.timers ?? new TimerSet();
    this.processEvents = options.events ?? new LeaseEvents();
    this.events = this.processEvents.child();
    this.logger = options.logger ?? new Logger({ serviceName: 'leasehold-worker' });
    this.logger.appendKeys({ workerId: options.workerId });
    this.metrics = options.metrics ?? new RecordingMetrics();
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.types = options.types ?? workerTypes(options.config, options.registry);
  }

  /**
   * Delayed tasks known to fall due (a burst this run was started ahead of, or a burst its timekeeper
   * found due now): once due, this worker claims them straight from their delay partition, and it
   * stays up for them. What it cannot take is left to the promotion. Forgotten when the run returns.
   */
  offerDue(entries: readonly DueTask[], options: { steal?: boolean } = {}): void {
    if (entries.length === 0) return;
    this.claimMemory.offerDue(entries, this.options.random ?? Math.random, options);
    if (this.options.refillDue) this.inBurst = true;
    if (!entries.some((e) => e.dueAt <= this.clock.now())) return;
    if (this.wake) this.wake();
    else this.lookAgainPending = true;
  }

  /** Tasks running now. */
  get running(): number {
    return this.active.size;
  }

  async run(runOptions: RunOptions = {}): Promise<RunSummary> {
    // One run at a time: a second would share the claim memory and count every figure twice.
    if (this.busy) throw new WorkerBusyError(this.options.workerId);
    this.busy = true;
    try {
      return await this.runOnce(runOptions);
    } finally {
      this.busy = false;
    }
  }

  private async runOnce(runOptions: RunOptions): Promise<RunSummary> {
    const { config } = this.options;
    const remaining = runOptions.remainingTimeMs ?? (() => Number.POSITIVE_INFINITY);
    const idleStopMs = runOptions.idleStopMs ?? config.idleStopMs;
    const run = this.startRun();
    const onStop = () => this.wake?.();
    runOptions.stop?.addEventListener('abort', onStop);
    // Look at every partition again, and at once if the worker is waiting for its next poll: an
    // enqueue in this process starts its task within milliseconds, not half a poll interval.
    // A task readied while a round is in flight may sit in a partition that round already marked
    // empty: the next pause is then skipped and the marks forgotten again.
    // Claim rounds in a row that won nothing: the idle polls back off (poll-rules.ts, idlePollWait).
    let idlePolls = 0;
    // The next round reads the ready partitions whatever the look gate says (see RunOptions.lookGate).
    const gate = runOptions.lookGate;
    let mustRead = !runOptions.offerReady?.length || !runOptions.returnWhenIdle;
    // Counts lookAgain calls, so one that came during a claim round is not undone by the round's end.
    let lookAgainCalls = 0;
    const lookAgain = () => {
      this.claimMemory.forgetDrained();
      idlePolls = 0;
      mustRead = true;
      lookAgainCalls++;
      wakeUp();
    };
    const wakeUp = () => {
      if (this.wake) this.wake();
      else this.lookAgainPending = true;
    };
    // Tasks this worker was handed by key: their 'task:readied' wakes it without re-reading every partition.
    const offeredIds = new Set<string>();
    // A task named by key in this process (an enqueue, a promotion): this worker takes it with one write,
    // if it has room; the event is marked so no other worker of the process goes for it too.
    const takeByKey = (event: object, task: { id: string; type: string; readySk: string }) => {
      if (this.active.size >= this.options.config.workerConcurrency) return false;
      hintsTaken.add(event);
      this.claimMemory.offerReady({ ...task, shard: shardForId(task.id) });
      return true;
    };
    const unsubscribe = [
      countLifecycle(this.events, this.metrics, {
        monotonic: this.monotonic,
        ...(this.options.metricsFlushIntervalMs === undefined
          ? {}
          : { flushIntervalMs: this.options.metricsFlushIntervalMs }),
      }),
      // A write in this process readied a task, or this worker put one back: look at every partition
      // again at once. A promotion names its ready key: one worker serving its type, with room, takes
      // it by key (one write, no read of the index, which may not show it yet); the others leave it.
      this.processEvents.on('task:readied', (readied) => {
        const { taskId, byKey } = readied;
        if (taskId !== undefined && offeredIds.delete(taskId)) return wakeUp();
        if (taskId !== undefined && byKey !== undefined) {
          if (hintsTaken.has(readied) || !this.types.includes(byKey.type)) return;
          if (takeByKey(readied, { id: taskId, ...byKey })) return wakeUp();
        }
        lookAgain();
      }),
      // A task enqueued in this process: one worker serving its type takes it by key in its next round,
      // or between the reads of the round under way (before the readied wake-up); or, without its key
      // (another priority), reads its partition first. One only: workers sharing a process that all
      // went for it would collide on it.
      this.processEvents.on('task:enqueued', (enqueued) => {
        if (enqueued.availableAt > this.clock.now() || !this.types.includes(enqueued.type)) return;
        if (hintsTaken.has(enqueued)) return;
        if (enqueued.readySk !== undefined) {
          const { taskId: id, type, readySk } = enqueued;
          if (takeByKey(enqueued, { id, type, readySk })) offeredIds.add(id);
        } else if (this.wake) {
          hintsTaken.add(enqueued);
          this.claimMemory.lookFirst(enqueued.type, shardForId(enqueued.taskId));
        }
      }),
      this.events.on('task:promoted', lookAgain),
      this.events.on('task:finished', ({ status }) => {
        if (status === 'RETRYING' || status === 'RELEASED') lookAgain();
      }),
    ];
    const outcomeFlushes = flushOutcomesEvery(this.events, this.options.store, this.logger, {
      intervalMs: this.options.metricsFlushIntervalMs ?? METRICS_FLUSH_INTERVAL_MS,
      monotonic: this.monotonic,
    });
    for (const { type, shard } of runOptions.lookFirst ?? []) this.claimMemory.lookFirst(type, shard);
    for (const candidate of runOptions.offerReady ?? []) this.claimMemory.offerReady(candidate);
    run.keeper.start();
    // The duty starts after the first claim round: its reads must not slow the claim a kick is waiting for.
    let dutyStarted = false;
    let claimingOverTold = false;
    let saturatedInRun = false;
    try {
      let idleSince = this.clock.now();
      for (;;) {
        if (runOptions.stop?.aborted) {
          run.summary.stoppedBecause = 'stop-signal';
          break;
        }
        const left = remaining();
        if (left <= config.drainMarginMs) {
          run.summary.stoppedBecause = 'deadline';
          break;
        }
        // Only types whose timeout still fits in this invocation, with the drain margin to spare. A task
        // never runs longer than its type allows (effectiveTimeoutMs), so what is claimed here can finish.
        const fitting = this.types.filter((type) =>
          canStartWithin(left, typeTimeoutMs(this.options.registry.get(type)?.timeoutMs, config), config),
        );
        const free = config.workerConcurrency - this.active.size;
        const narrowed = fitting.length < this.types.length;
        if (narrowed && !claimingOverTold && (runOptions.onClaimingOver || fitting.length === 0)) {
          claimingOverTold = true;
          runOptions.onClaimingOver?.({ backlog: saturatedInRun });
        }
        // Told the fleet its claiming is over: it gave the seat away, so nothing more may be claimed.
        const seatGivenAway = claimingOverTold && runOptions.onClaimingOver !== undefined;
        const claimable = seatGivenAway ? [] : fitting;
        if (claimable.length === 0 && this.active.size === 0) {
          run.summary.stoppedBecause = 'deadline';
          break;
        }
        // Out of offered entries while the burst lasts: read the delay partitions again (once a poll
        // interval) rather than every ready partition, which the burst's tasks never enter.
        const refill =
          free > 0 && this.inBurst && this.claimMemory.dueWaiting === 0 ? await this.refill() : 'none';
        const gated =
          gate !== undefined &&
          !mustRead &&
          this.claimMemory.offeredWaiting === 0 &&
          this.claimMemory.dueWaiting === 0 &&
          !this.inBurst;
        // A run that returns when idle does not poll once its tasks ended: its last look is the fleet's.
        const look =
          !gated || ((!runOptions.returnWhenIdle || this.active.size > 0) && (await gate.shouldRead()));
        if (!look) idlePolls++;
        if (look && free > 0 && claimable.length > 0 && refill !== 'wait') {
          const callsBefore = lookAgainCalls;
          const { won, handedOnly } = await this.claim(run, claimable, free, runOptions.returnWhenIdle);
          // Read on after a round that filled every slot, or when work was readied while it ran.
          mustRead = won === free || lookAgainCalls !== callsBefore;
          // Tasks handed over by key to an idle worker are no sign of more work: its next poll keeps
          // its pace. A fresh run reads on at once (its kick may stand for several tasks) unless the
          // fleet's look gate tells it when to read.
          const handedOver = won > 0 && handedOnly && won < free && (idlePolls > 0 || gate !== undefined);
          if (!handedOver) idlePolls = won > 0 ? 0 : idlePolls + 1;
          if (!dutyStarted) {
            dutyStarted = true;
            runOptions.duty?.start();
          }
          if (won > 0) {
            this.wonSinceRefill += won;
            if (won === free) {
              saturatedInRun = true;
              this.options.onSaturated?.({ inBurst: this.inBurst });
            }
            idleSince = this.clock.now();
            if (!handedOver) continue;
          }
        }
        if (!dutyStarted) {
          dutyStarted = true;
          runOptions.duty?.start();
        }
        // A promotion that finished during the last round made work that round could not see yet.
        idleSince = Math.max(idleSince, run.promoter.promotedAt);
        // A retry due within the idle window is work on its way; a long backoff is left to the next invocation.
        // A burst this run was started for, or due tasks offered to it (due before the run must end), keep it up.
        const nextOffered = this.claimMemory.nextDueAt;
        const expecting =
          this.inBurst ||
          expectingWork(runOptions.expectWorkAt, this.clock.now()) ||
          (nextOffered !== undefined && nextOffered - this.clock.now() <= left - config.drainMarginMs);
        if (
          this.active.size > 0 ||
          run.promoter.dueWithin(idleStopMs) ||
          runOptions.duty?.dueWithin(left - config.drainMarginMs) ||
          expecting
        )
          idleSince = this.clock.now();
        else if (this.clock.now() - idleSince >= (this.returnsNow(runOptions, mustRead) ? 0 : idleStopMs)) {
          run.summary.stoppedBecause = 'idle';
          break;
        }
        // Offered due tasks still waiting while there is room: the next round takes them now (each round
        // takes some off the list, won or lost, so this ends).
        if (nextOffered !== undefined && nextOffered <= this.clock.now() && free > 0) continue;
        // Sleep until the next poll, a finished task, a stop, or the start of the drain margin.
        const poll =
          refill === 'wait'
            ? this.refilledAt + config.pollIntervalMs - this.clock.now()
            : idlePollWait(
                pollWait(
                  config.pollIntervalMs,
                  runOptions.expectWorkAt ?? this.claimMemory.nextDueAt,
                  this.clock.now(),
                ),
                config.pollIntervalMs,
                idlePolls,
                this.options.idlePollCeilingMs,
              );
        this.claimMemory.idleWaitMs = idlePolls > 1 ? poll : 0;
        await this.pause(Math.max(0, Math.min(poll, left - config.drainMarginMs)));
      }
      await this.drain(run);
    } finally {
      runOptions.stop?.removeEventListener('abort', onStop);
      if (dutyStarted) await runOptions.duty?.stop();
      // Offered due tasks not taken are left to their promotion: a later invocation must not try stale ones.
      this.claimMemory.dropDue();
      this.inBurst = false;
      this.refilledAt = Number.NEGATIVE_INFINITY;
      this.wonSinceRefill = 0;
      await run.keeper.stop();
      // Every outcome of this run is counted by now: written before the return (Lambda freezes after it).
      await outcomeFlushes.stop();
      this.timers.clearAll();
      const { rounds, maxLagMs } = run.keeper.figures;
      Object.assign(run.summary, {
        heartbeatRounds: rounds,
        maxEventLoopLagMs: maxLagMs,
        timersArmed: this.timers.armed,
        retriesWaiting: run.promoter.waiting,
      });
      unsubscribe.forEach((off) => off());
      this.metrics.flush();
    }
    return run.summary;
  }

  /** A kick's run with nothing left to take by key: it returns without waiting out the idle window. */
  private returnsNow(runOptions: RunOptions, mustRead: boolean): boolean {
    return runOptions.returnWhenIdle === true && !mustRead && this.claimMemory.offeredWaiting === 0;
  }

  private startRun(): Run {
    const { store, config } = this.options;
    const common = {
      store,
      clock: this.clock,
      timers: this.timers,
      events: this.events,
      logger: this.logger,
    };
    return {
      keeper: new LeaseKeeper({
        ...common,
        heartbeatIntervalMs: config.heartbeatIntervalMs,
        monotonic: this.monotonic,
      }),
      promoter: new RetryPromoter({ ...common, onSettled: () => this.wake?.() }),
      summary: {
        claimed: 0,
        lostRaces: 0,
        heartbeatRounds: 0,
        maxEventLoopLagMs: 0,
        stoppedBecause: 'idle',
        timersArmed: 0,
        retriesWaiting: 0,
      },
    };
  }

  /**
   * More of the burst, read from the delay partitions and offered as a steal: 'offered', 'wait' (read
   * less than a poll interval ago: no ready read meanwhile), or 'none' (the burst is over: back to the
   * ready partitions).
   */
  private async refill(): Promise<'offered' | 'wait' | 'none'> {
    const now = this.clock.now();
    if (now - this.refilledAt < this.options.config.pollIntervalMs) return 'wait';
    // The entries read last time won nothing (another priority, a type with a limit, all taken by
    // others): what is left is the promotion's.
    if (this.refilledAt !== Number.NEGATIVE_INFINITY && this.wonSinceRefill === 0) {
      this.inBurst = false;
      return 'none';
    }
    this.refilledAt = now;
    this.wonSinceRefill = 0;
    let entries: readonly DueTask[] = [];
    try {
      entries = (await this.options.refillDue?.(now)) ?? [];
    } catch (error) {
      // What is left of the burst is promoted by the timekeeper: this run reads the ready partitions.
      this.logger.warn('reading more of the burst failed', { error: describeError(error) });
    }
    if (entries.length === 0) {
      this.inBurst = false;
      return 'none';
    }
    this.claimMemory.offerDue(entries, this.options.random ?? Math.random, { steal: true });
    return 'offered';
  }

  /** Starts a claimed task: an Execution holding its lease, watched until it ends. */
  private startClaimed(run: Run, claimed: Claimed): void {
    const { store, config, registry } = this.options;
    const { task, lease } = claimed;
    this.events.emit('claim:won', {
      taskId: task.id,
      type: task.type,
      token: lease.token,
      leaseUntil: lease.leaseUntil,
      attempt: task.attempts,
    });
    const definition = registry.get(task.type);
    const execution = new Execution(
      {
        store,
        keeper: run.keeper,
        events: this.events,
        clock: this.clock,
        timers: this.timers,
        logger: this.logger,
        definition,
        timeoutMs: effectiveTimeoutMs(task.timeoutMs, definition?.timeoutMs, config),
        graceMs: config.heartbeatIntervalMs,
        onRetryScheduled: (retry) => run.promoter.schedule(retry),
      },
      claimed,
    );
    this.active.set(task.id, execution);
    void execution
      .start()
      .catch((error: unknown) =>
        this.logger.error('task execution failed', { taskId: task.id, error: describeError(error) }),
      )
      .finally(() => {
        // A re-claim of the same task (its old handler ignored a lost lease) may be running now.
        if (this.active.get(task.id) === execution) this.active.delete(task.id);
        this.wake?.();
      });
  }

  /** One claim round; each task won starts running at once. Returns how many were won. */
  private async claim(
    run: Run,
    types: string[],
    free: number,
    handedFirst = false,
  ): Promise<{ won: number; handedOnly: boolean }> {
    const { store, workerId } = this.options;
    try {
      const round = await store.claim(
        { workerId, types, max: free, ...(handedFirst ? { handedFirst } : {}) },
        this.claimMemory,
      );
      run.summary.claimed += round.claimed.length;
      run.summary.lostRaces += round.lostRaces;
      this.events.emit('claim:round', { claimed: round.claimed.length, lostRaces: round.lostRaces });
      for (const claimed of round.claimed) this.startClaimed(run, claimed);
      return { won: round.claimed.length, handedOnly: round.handedOnly === true };
    } catch (error) {
      this.logger.error('claim failed', { error: describeError(error) });
      return { won: 0, handedOnly: false };
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.lookAgainPending) {
      this.lookAgainPending = false;
      this.claimMemory.forgetDrained();
      return Promise.resolve();
    }
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

  /** Abort what runs, wait for it (bounded), and make the stragglers give their leases back. */
  private async drain(run: Run): Promise<void> {
    const executions = [...this.active.values()];
    if (executions.length === 0) return;
    for (const e of executions) e.abort('shutdown');
    const { drainMarginMs, requestDeadlineMs } = this.options.config;
    const all = Promise.all(executions.map((e) => e.start()));
    await Promise.race([all, this.timers.sleep(Math.max(0, drainMarginMs - 2 * requestDeadlineMs))]);
    for (const e of executions) e.stopWaiting();
    await all;
    await run.keeper.stop();
  }
}
