/**
 * One run of a worker (one Lambda invocation, or the local stack's life): it claims while it has free
 * slots and time, waits between polls, and returns on a stop, at the deadline, or once idle. What it
 * owns lives and dies with it: the lease keeper, its timekeeper, its signals, its figures. What
 * outlives it (the claim memory, the running tasks, the burst) is the Worker's (worker.ts).
 */
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import { canStartWithin, typeTimeoutMs } from '../invocation-budget.js';
import { METRICS_FLUSH_INTERVAL_MS, type LeaseholdMetrics } from '../metrics.js';
import type { ClaimState } from '../store/claim-state.js';
import type { BurstRefill } from './burst-refill.js';
import { LeaseKeeper } from './lease-keeper.js';
import { countLifecycle } from './lifecycle-metrics.js';
import { flushOutcomesEvery } from './outcome-flushes.js';
import { expectingWork, idlePollWait, pollWait } from './poll-rules.js';
import {
  emptyRunSummary,
  type RunOptions,
  type RunSummary,
  type RunTimekeeper,
  type WorkerOptions,
} from './run-options.js';
import type { RunningTasks } from './running-tasks.js';
import type { TimerSet } from './timers.js';
import { Timekeeper } from './timekeeper.js';
import { RunSignals, type PollPause } from './work-signals.js';
import type { ClaimableTypes } from './paused-types.js';
import type { Logger } from '@aws-lambda-powertools/logger';

/** What a run uses of its worker. */
export interface WorkerParts {
  options: WorkerOptions;
  clock: Clock;
  timers: TimerSet;
  /** The worker's own steps, and the process's stream (where the store says it readied a task). */
  events: LeaseEvents;
  processEvents: LeaseEvents;
  logger: Logger;
  metrics: LeaseholdMetrics;
  monotonic: () => number;
  types: readonly string[];
  memory: ClaimState;
  tasks: RunningTasks;
  pause: PollPause;
  burst: BurstRefill;
  /** The served types it may claim now (the operators' pauses out); undefined: all of them. */
  claimable: ((types: readonly string[]) => Promise<ClaimableTypes>) | undefined;
}

export class WorkerRun {
  private readonly keeper: LeaseKeeper;
  /** The one that promotes this run's retries: the source's, or one of its own that reads nothing. */
  private readonly timekeeper: RunTimekeeper;
  private readonly signals: RunSignals;
  private readonly idleStopMs: number;
  private readonly summary: RunSummary = emptyRunSummary();
  /** The timekeeper starts after the first claim round: its reads must not slow the claim it was started for. */
  private timekeeperStarted = false;
  private claimingOverTold = false;
  /** A round of this run filled every free slot. */
  private saturated = false;
  private idleSince: number;

  constructor(
    private readonly parts: WorkerParts,
    private readonly options: RunOptions,
  ) {
    const { store, config } = parts.options;
    const { clock, timers, events, logger, tasks, pause } = parts;
    const common = { store, clock, timers, events, logger };
    this.keeper = new LeaseKeeper({
      ...common,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      monotonic: parts.monotonic,
    });
    this.timekeeper = options.timekeeper ?? new Timekeeper(common);
    this.signals = new RunSignals(
      {
        memory: parts.memory,
        types: parts.types,
        pause,
        hasRoom: () => tasks.size < config.workerConcurrency,
        now: () => clock.now(),
      },
      // A run handed its tasks by key, to return when idle, reads only when told to.
      !options.offerReady?.length || !options.returnWhenIdle,
    );
    this.idleStopMs = options.idleStopMs ?? config.idleStopMs;
    this.idleSince = clock.now();
  }

  async run(): Promise<RunSummary> {
    const { parts, options } = this;
    const onStop = () => parts.pause.interrupt();
    options.stop?.addEventListener('abort', onStop);
    const { metricsFlushIntervalMs, store } = parts.options;
    const stopListening = [
      countLifecycle(parts.events, parts.metrics, {
        monotonic: parts.monotonic,
        ...(metricsFlushIntervalMs === undefined ? {} : { flushIntervalMs: metricsFlushIntervalMs }),
      }),
      this.signals.listen(parts.processEvents, parts.events),
    ];
    const outcomeFlushes = flushOutcomesEvery(parts.events, store, parts.logger, {
      intervalMs: metricsFlushIntervalMs ?? METRICS_FLUSH_INTERVAL_MS,
      monotonic: parts.monotonic,
    });
    parts.memory.placeAt(options.place);
    for (const { type, shard } of options.lookFirst ?? []) parts.memory.lookFirst(type, shard);
    for (const candidate of options.offerReady ?? []) parts.memory.offerReady(candidate);
    this.keeper.start();
    try {
      this.summary.stoppedBecause = await this.loop();
      await parts.tasks.drain();
      await this.keeper.stop();
    } finally {
      options.stop?.removeEventListener('abort', onStop);
      if (this.timekeeperStarted) await this.timekeeper.stop();
      // Offered due tasks not taken are left to their promotion: a later invocation must not try stale ones.
      parts.memory.dropDue();
      parts.burst.reset();
      await this.keeper.stop();
      // Every outcome of this run is counted by now: written before the return (Lambda freezes after it).
      await outcomeFlushes.stop();
      parts.timers.clearAll();
      Object.assign(this.summary, {
        heartbeatRounds: this.keeper.figures.rounds,
        maxEventLoopLagMs: this.keeper.figures.maxLagMs,
        timersArmed: parts.timers.armed,
        retriesWaiting: this.timekeeper.expectedWaiting,
      });
      stopListening.forEach((off) => off());
      parts.metrics.flush();
    }
    return this.summary;
  }

  /** Claims and waits until a stop, the deadline, or the idle window says to return. */
  private async loop(): Promise<RunSummary['stoppedBecause']> {
    const { config } = this.parts.options;
    const { memory, burst, tasks, clock } = this.parts;
    const remaining = this.options.remainingTimeMs ?? (() => Number.POSITIVE_INFINITY);
    for (;;) {
      if (this.options.stop?.aborted) return 'stop-signal';
      const left = remaining();
      if (left <= config.drainMarginMs) return 'deadline';
      const claimable = this.claimableTypes(left);
      if (claimable.length === 0 && tasks.size === 0) return 'deadline';
      const free = config.workerConcurrency - tasks.size;
      // Out of offered entries while the burst lasts: read the delay partitions again (once a poll
      // interval) rather than every ready partition, which the burst's tasks never enter.
      const refill =
        free > 0 && burst.inBurst && memory.dueWaiting === 0 ? await burst.refill(clock.now()) : 'none';
      const look = await this.shouldLook();
      if (!look) this.signals.idlePolls++;
      if (look && free > 0 && claimable.length > 0 && refill !== 'wait')
        if ((await this.claimStep(claimable, free)) === 'again') continue;
      this.startTimekeeper();
      if (this.idleOver(left)) return 'idle';
      // Offered due tasks still waiting while there is room: the next round takes them now (each round
      // takes some off the list, won or lost, so this ends).
      const nextOffered = memory.nextDueAt;
      if (nextOffered !== undefined && nextOffered <= clock.now() && free > 0) continue;
      // Sleep until the next poll, a finished task, a stop, or the start of the drain margin.
      await this.parts.pause.pause(this.pollWaitMs(refill === 'wait', left));
    }
  }

  /**
   * The types whose timeout still fits in the time left, with the drain margin to spare (a task never
   * runs longer than its type allows, so what is claimed can finish). The first time a type drops out,
   * the source is told its claiming is over; it gives the run's place away, and nothing more is claimed.
   */
  private claimableTypes(left: number): string[] {
    const { config, registry } = this.parts.options;
    const { types } = this.parts;
    const fitting = types.filter((type) =>
      canStartWithin(left, typeTimeoutMs(registry.get(type)?.timeoutMs, config), config),
    );
    const { onClaimingOver } = this.options;
    if (fitting.length < types.length && !this.claimingOverTold && (onClaimingOver || fitting.length === 0)) {
      this.claimingOverTold = true;
      onClaimingOver?.({ backlog: this.saturated });
    }
    return this.claimingOverTold && onClaimingOver !== undefined ? [] : fitting;
  }

  /** Whether this poll reads: always, unless the source's look gate is asked and says no. */
  private async shouldLook(): Promise<boolean> {
    const gate = this.options.lookGate;
    const { memory, burst, tasks } = this.parts;
    const gated =
      gate !== undefined &&
      !this.signals.mustRead &&
      memory.offeredWaiting === 0 &&
      memory.dueWaiting === 0 &&
      // Heads left to other places' workers are looked at again when they waited (claim-state.ts).
      memory.othersDueAt === undefined &&
      !burst.inBurst;
    if (!gated) return true;
    // A run that returns when idle does not poll once its tasks ended: its last look is its source's.
    const read = (!this.options.returnWhenIdle || tasks.size > 0) && (await gate.shouldRead());
    // The source saw a sign of new work (a ring, its safety read): this round takes whatever it finds.
    if (read) memory.takeEveryHeadNextRound();
    return read;
  }

  /** One claim round and what it says of the next: 'again' (read on at once) or 'idle' (wait for a poll). */
  private async claimStep(claimable: string[], free: number): Promise<'again' | 'idle'> {
    const { signals } = this;
    const callsBefore = signals.lookAgainCalls;
    const { won, handedOnly } = await this.claim(claimable, free);
    // Read on after a round that filled every slot, or when work was readied while it ran.
    signals.mustRead = won === free || signals.lookAgainCalls !== callsBefore;
    // Tasks handed over by key to an idle worker are no sign of more work: its next poll keeps its
    // pace. A fresh run reads on at once (its kick may stand for several tasks) unless the source's
    // look gate tells it when to read.
    const handedOver =
      won > 0 && handedOnly && won < free && (signals.idlePolls > 0 || this.options.lookGate !== undefined);
    if (!handedOver) signals.idlePolls = won > 0 ? 0 : signals.idlePolls + 1;
    this.startTimekeeper();
    if (won === 0) return 'idle';
    this.parts.burst.won(won);
    if (won === free) {
      this.saturated = true;
      this.parts.options.onSaturated?.({ inBurst: this.parts.burst.inBurst });
    }
    this.idleSince = this.parts.clock.now();
    return handedOver ? 'idle' : 'again';
  }

  /** One claim round; each task won starts running at once. */
  private async claim(types: string[], free: number): Promise<{ won: number; handedOnly: boolean }> {
    const { store, workerId } = this.parts.options;
    const { events, tasks, memory } = this.parts;
    try {
      const handedFirst = this.options.returnWhenIdle === true;
      const { types: unpaused, grouped } = (await this.parts.claimable?.(types)) ?? { types, grouped: [] };
      if (unpaused.length === 0) {
        // Every type it serves is paused: the due entries it was offered are left to their promotion
        // (a round would take none of them, and the loop would come straight back for them).
        memory.dropDue();
        return { won: 0, handedOnly: false };
      }
      const round = await store.claim(
        {
          workerId,
          types: unpaused,
          max: free,
          ...(handedFirst ? { handedFirst } : {}),
          ...(grouped.length > 0 ? { groupedTypes: grouped } : {}),
        },
        memory,
      );
      this.summary.claimed += round.claimed.length;
      this.summary.lostRaces += round.lostRaces;
      events.emit('claim:round', { claimed: round.claimed.length, lostRaces: round.lostRaces });
      for (const claimed of round.claimed)
        tasks.start(claimed, { keeper: this.keeper, timekeeper: this.timekeeper });
      return { won: round.claimed.length, handedOnly: round.handedOnly === true };
    } catch (error) {
      this.parts.logger.error('claim failed', { error: describeError(error) });
      return { won: 0, handedOnly: false };
    }
  }

  private startTimekeeper(): void {
    if (this.timekeeperStarted) return;
    this.timekeeperStarted = true;
    this.timekeeper.start();
  }

  /** Whether the run has been idle long enough to return (work on its way keeps it up). */
  private idleOver(left: number): boolean {
    const { drainMarginMs } = this.parts.options.config;
    const { memory, burst, tasks } = this.parts;
    const now = this.parts.clock.now();
    // A promotion that finished during the last round made work that round could not see yet.
    this.idleSince = Math.max(this.idleSince, this.timekeeper.promotedAt);
    // A retry due within the idle window is work on its way; a long backoff is left to the next
    // invocation. A burst this run was started for, due tasks offered to it, or heads it left to other
    // places' workers (due before the run must end), keep it up.
    const nextOffered = this.nextLookAt();
    const expecting =
      burst.inBurst ||
      expectingWork(this.options.expectWorkAt, now) ||
      (nextOffered !== undefined && nextOffered - now <= left - drainMarginMs);
    // The source's timekeeper knows what falls due before the run must end; a run's own knows only its
    // retries, and one due after the idle window is left to the next invocation.
    const timekeeperWindow = this.options.timekeeper ? left - drainMarginMs : this.idleStopMs;
    if (tasks.size > 0 || this.timekeeper.dueWithin(timekeeperWindow) || expecting) {
      this.idleSince = now;
      return false;
    }
    // A run handed its tasks by key with nothing left to take returns without waiting out the window.
    const returnsNow =
      this.options.returnWhenIdle === true && !this.signals.mustRead && memory.offeredWaiting === 0;
    return now - this.idleSince >= (returnsNow ? 0 : this.idleStopMs);
  }

  /**
   * When the run has reason to look before its poll: the next offered due task, or the moment heads
   * its last round left to other places' workers may be taken (they were not taken by then: their
   * owner is busy or gone).
   */
  private nextLookAt(): number | undefined {
    const { nextDueAt, othersDueAt } = this.parts.memory;
    if (nextDueAt === undefined || othersDueAt === undefined) return nextDueAt ?? othersDueAt;
    return Math.min(nextDueAt, othersDueAt);
  }

  /** The wait until the next poll: the burst's next read, else the poll interval, backed off when idle. */
  private pollWaitMs(refillWaits: boolean, left: number): number {
    const { pollIntervalMs, drainMarginMs } = this.parts.options.config;
    const { memory, burst } = this.parts;
    const now = this.parts.clock.now();
    const { idlePolls } = this.signals;
    const poll = refillWaits
      ? burst.nextReadAt - now
      : idlePollWait(
          pollWait(pollIntervalMs, this.options.expectWorkAt ?? this.nextLookAt(), now),
          pollIntervalMs,
          idlePolls,
          this.parts.options.idlePollCeilingMs,
        );
    memory.idleWaitMs = idlePolls > 1 ? poll : 0;
    return Math.max(0, Math.min(poll, left - drainMarginMs));
  }
}
