/**
 * One worker invocation in the fleet: take a seat (or return at once when every seat is held), run
 * the worker (the holder of seat 0 also keeps time: it promotes delayed tasks as they fall due), give
 * the seat back after the invocations it asked for have been sent (Lambda freezes the process once
 * the handler returns), and hand over: delayed work still waiting for a timekeeper starts the next
 * invocation, which takes the seat 0 just freed.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { RunOptions, RunSummary, RunTimekeeper, Worker } from '../worker/worker.js';
import { seatUntil } from './fleet-rules.js';
import { RingGate } from './ring-gate.js';
import type { FleetSeats, SeatLease } from './fleet-seats.js';
import type { FleetScaler } from './fleet-scaler.js';
import type { StartHints, WorkerInvoker } from './worker-invoker.js';
import type { IdleTickPlan } from './idle-tick.js';
import { TUNING } from '../tuning.js';

/** The timekeeper of seat 0's holder, which reads the delay partitions (shared/worker/timekeeper.ts). */
export interface TimekeeperDuty extends RunTimekeeper {
  readonly nextDueAt: number | undefined;
  /** Reads whether any delayed task or retry falls due within the horizon (see TUNING.timekeeper.lastLookDelayMs). */
  dueAfterRelease(): Promise<boolean>;
}

export interface FleetInvocationDeps {
  worker: Pick<Worker, 'run'>;
  seats: Pick<FleetSeats, 'take' | 'takeTimekeeper' | 'adopt' | 'giveBack' | 'cap'> &
    Partial<Pick<FleetSeats, 'takeOrRing' | 'ringsOf'>>;
  /**
   * Rings (fleet-seats.ts): idle polls read the invocation's own seat instead of the ready partitions,
   * an invocation started for work that finds no seat rings a held one, and a holder answers a ring
   * it did not read for when it gives its seat back. Off, polls read the partitions.
   */
  rings?: boolean;
  scaler: Pick<FleetScaler, 'settled' | 'refill'>;
  invoker: WorkerInvoker;
  /**
   * For an invocation started ahead of a burst: reads the delayed tasks due by then and offers them to
   * the worker, which claims them straight from their delay partition at the instant (no promotion).
   */
  offerBurst?: (at: number) => Promise<void>;
  /** A fresh timekeeper for an invocation that holds seat 0. */
  timekeeper: () => TimekeeperDuty;
  /**
   * For the scheduled tick: whether there is anything to do (idle-tick.ts, from the queue summary). A
   * tick with nothing to do returns at once, before it takes a seat: one read a minute when idle,
   * whatever the number of types and shards. Absent, or failing: the tick runs as any invocation.
   */
  idleCheck?: () => Promise<IdleTickPlan>;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'info'>;
  clockSkewMs: number;
  /** Waits `ms` (the last look's delay); a timer by default, instant in tests. */
  pause?: (ms: number) => Promise<void>;
}

export type InvocationSummary =
  | (RunSummary & {
      seat: number;
      timekeeper: boolean;
      handedOver: boolean;
      answeredRing: boolean;
      /** A ring answered in this invocation, warm (answerRing): what that second run did. */
      ringAnswer?: InvocationSummary;
    })
  | {
      seat: undefined;
      stoppedBecause: 'fleet-full' | 'seat-unavailable' | 'timekeeper-running' | 'nothing-to-do';
      /** The seat this invocation rang, its holder to look for the tasks it was started for. */
      rang?: number;
    };

export async function runFleetInvocation(
  deps: FleetInvocationDeps,
  holder: string,
  remainingTimeMs: () => number,
  hints: StartHints = {},
): Promise<InvocationSummary> {
  if (await nothingToDo(deps)) return { seat: undefined, stoppedBecause: 'nothing-to-do' };
  // Handed its tasks by key, a kick's invocation returns once they end. Any kick's invocation leaves
  // seat 0 (the timekeeper's) to the scheduled tick and to invocations started to keep time: one
  // that runs the tasks it was started for is no better a timekeeper than its slowest handler (a
  // blocked one holds seat 0 to its deadline, and delayed tasks then wait for the recovery sweep).
  // Started for work at all, it rings a held seat when it finds none free.
  const handedOnly = (hints.offers?.length ?? 0) > 0 && !hints.readAll && !hints.lookFirst;
  const startedForWork = handedOnly || hints.readAll === true || hints.lookFirst !== undefined;
  const taken = await takeSeat(deps, holder, remainingTimeMs, hints, startedForWork);
  if ('summary' in taken) return taken.summary;
  return runInSeat(deps, taken.seat, remainingTimeMs, hints, handedOnly);
}

/** For the scheduled tick: the queue summary says there is nothing to do (a failed read: run as usual). */
async function nothingToDo(deps: FleetInvocationDeps): Promise<boolean> {
  if (!deps.idleCheck) return false;
  const plan = await deps.idleCheck().catch((error: unknown) => {
    deps.logger.warn('reading the queue summary failed; the tick runs as usual', {
      error: describeError(error),
    });
    return undefined;
  });
  return plan !== undefined && !plan.run;
}

/** Takes this invocation's seat, or says why it returns without one. */
async function takeSeat(
  deps: FleetInvocationDeps,
  holder: string,
  remainingTimeMs: () => number,
  hints: StartHints,
  startedForWork: boolean,
): Promise<{ seat: SeatLease } | { summary: InvocationSummary }> {
  const { seats, clock, logger } = deps;
  let seat: SeatLease | undefined;
  try {
    const until = seatUntil(clock.now(), remainingTimeMs(), deps.clockSkewMs);
    // A seat reserved for this invocation by whoever started it comes first; if it is gone (this
    // invocation started after the reservation ran out), it takes a free one like any other.
    if (hints.seat) seat = await seats.adopt(hints.seat, holder, until);
    seat ??= hints.keepTime
      ? await seats.takeTimekeeper(holder, until)
      : await seats.take(holder, until, { timekeeperLast: startedForWork });
    if (!seat && startedForWork && deps.rings && seats.takeOrRing) {
      // Every seat looked held: take one freed since (a consistent read), or ring a held one, whose
      // holder then looks for this invocation's tasks.
      const outcome = await seats.takeOrRing(holder, until);
      if ('lease' in outcome) seat = outcome.lease;
      else if ('rung' in outcome)
        return { summary: { seat: undefined, stoppedBecause: 'fleet-full', rang: outcome.rung } };
    }
  } catch (error) {
    // Without a seat nothing may be claimed (the cap could not be checked); the next tick tries again.
    logger.warn('taking a fleet seat failed; this invocation claims nothing', {
      error: describeError(error),
    });
    return { summary: { seat: undefined, stoppedBecause: 'seat-unavailable' } };
  }
  if (seat) return { seat };
  if (hints.keepTime) return { summary: { seat: undefined, stoppedBecause: 'timekeeper-running' } };
  logger.info('every fleet seat is held; returning at once');
  return { summary: { seat: undefined, stoppedBecause: 'fleet-full' } };
}

/** Runs the worker in the seat taken, gives the seat back, and hands over what still waits. */
async function runInSeat(
  deps: FleetInvocationDeps,
  seat: SeatLease,
  remainingTimeMs: () => number,
  hints: StartHints,
  handedOnly: boolean,
): Promise<InvocationSummary> {
  const timekeeper = seat.index === TUNING.fleet.timekeeperSeat ? deps.timekeeper() : undefined;
  const gate =
    deps.rings && deps.seats.ringsOf
      ? new RingGate({ ringsOf: deps.seats.ringsOf.bind(deps.seats) }, seat, deps.clock)
      : undefined;
  const held = new HeldSeat(deps, seat, gate, timekeeper);
  let summary: RunSummary;
  try {
    if (hints.expectWorkAt !== undefined)
      // Without the offer the burst still starts: the timekeeper promotes it after its grace.
      await deps.offerBurst?.(hints.expectWorkAt).catch((error: unknown) =>
        deps.logger.warn('reading the burst ahead failed; its tasks start through their promotion', {
          error: describeError(error),
        }),
      );
    summary = await deps.worker.run({
      remainingTimeMs,
      // Invocations started together (a scale-up, a burst's prewarm) start at their seat's partitions.
      place: { index: seat.index, of: deps.seats.cap },
      ...(timekeeper ? { timekeeper } : {}),
      ...(hints.lookFirst
        ? { lookFirst: [{ type: hints.lookFirst.type, shard: hints.lookFirst.shard }] }
        : {}),
      ...offeredBy(hints),
      ...(gate ? { lookGate: gate } : {}),
      ...(handedOnly && gate ? { returnWhenIdle: true } : {}),
      ...(hints.expectWorkAt ? { expectWorkAt: hints.expectWorkAt } : {}),
      onClaimingOver: held.giveAway,
    });
  } finally {
    await held.givenAway;
    await deps.scaler.settled();
    await held.release();
  }
  const handedOver = await handOver(deps, held, summary, timekeeper, remainingTimeMs);
  const done = { ...summary, seat: seat.index, timekeeper: timekeeper !== undefined, handedOver };
  if (held.unanswered === 0) return { ...done, answeredRing: false };
  const answer = await answerRing(deps, seat.holder, remainingTimeMs);
  return {
    ...done,
    answeredRing: answer !== false,
    ...(typeof answer === 'object' ? { ringAnswer: answer } : {}),
  };
}

/** The seat while this invocation holds it: given back once, or given away early to a successor. */
class HeldSeat {
  /** Rings of the seat this invocation did not read for, learned as it gives the seat back. */
  unanswered = 0;
  /** Set once the run's claiming was over: whether a successor was started. */
  givenAway: Promise<boolean> | undefined;
  private released: Promise<void> | undefined;

  constructor(
    private readonly deps: FleetInvocationDeps,
    private readonly lease: SeatLease,
    private readonly gate: RingGate | undefined,
    private readonly timekeeper: TimekeeperDuty | undefined,
  ) {}

  release(): Promise<void> {
    return (this.released ??= this.deps.seats.giveBack(this.lease).then(
      ({ rings }) => {
        this.unanswered = Math.max(0, rings - (this.gate?.seen ?? rings));
      },
      (error: unknown) =>
        this.deps.logger.warn(
          'giving the fleet seat back failed; it frees itself at the invocation deadline',
          {
            error: describeError(error),
          },
        ),
    ));
  }

  /**
   * The claim window closed for a type while tasks still run: the seat goes to a successor that can
   * claim every type (and seat 0's timekeeping with it), instead of staying held until the slowest task ends.
   * Work of that type enqueued meanwhile then starts at once (a kick finds the seat free), and a
   * backlog this run was taking is taken on by the successor started into the seat.
   */
  giveAway = ({ backlog }: { backlog: boolean }): void => {
    const { deps, timekeeper } = this;
    this.givenAway ??= (async () => {
      if (timekeeper) await timekeeper.stop();
      await deps.scaler.settled();
      await this.release();
      if (timekeeper) return deps.invoker.start('leasehold.due', { keepTime: true });
      return backlog ? deps.scaler.refill() : false;
    })();
  };
}

/**
 * Starts the next timekeeper when work still waits for one: retries this run scheduled, or delayed
 * tasks the timekeeper knew of, fall due after it (seat 0 is free now, unless another timekeeper runs).
 * A seat given away already started seat 0's successor; retries scheduled from another seat start a
 * timekeeper if none runs (one returns at once if one does).
 */
async function handOver(
  deps: FleetInvocationDeps,
  held: HeldSeat,
  summary: RunSummary,
  timekeeper: TimekeeperDuty | undefined,
  remainingTimeMs: () => number,
): Promise<boolean> {
  const startTimekeeper = () => deps.invoker.start('leasehold.due', { keepTime: true });
  if (held.givenAway !== undefined)
    return (await held.givenAway) || (summary.retriesWaiting > 0 && (await startTimekeeper()));
  const due =
    timekeeper?.nextDueAt !== undefined ||
    summary.retriesWaiting > 0 ||
    (timekeeper !== undefined && (await lastLookFindsDue(deps, timekeeper, remainingTimeMs)));
  if (due) await startTimekeeper();
  return due;
}

/**
 * The seat was rung after this invocation's last read of the ready partitions: work that no running
 * invocation took was sent its way. With time left, this invocation answers it itself, warm: it takes
 * a seat again and runs a round that reads, as an invocation started for it would (no Invoke, no cold
 * start: in the sim, with a cap of 1, a new environment's init held a task rung for 3.5 s). With
 * little time left it starts one that reads (and takes the seat just given back).
 */
async function answerRing(
  deps: FleetInvocationDeps,
  holder: string,
  remainingTimeMs: () => number,
): Promise<InvocationSummary | boolean> {
  if (remainingTimeMs() < TUNING.fleet.answerInPlaceMinRemainingMs)
    return deps.invoker.start('leasehold.kick', { readAll: true });
  // Not the tick's idle check again: a ring is work.
  const { idleCheck: _idleCheck, ...rest } = deps;
  return runFleetInvocation(rest, holder, remainingTimeMs, { readAll: true });
}

/** The last look (TUNING.timekeeper.lastLookDelayMs): seat 0 is free; does anything fall due that nobody keeps time for? */
async function lastLookFindsDue(
  deps: FleetInvocationDeps,
  timekeeper: TimekeeperDuty,
  remainingTimeMs: () => number,
): Promise<boolean> {
  if (remainingTimeMs() < TUNING.timekeeper.lastLookMinRemainingMs) return false;
  await (deps.pause ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms))))(
    TUNING.timekeeper.lastLookDelayMs,
  );
  return timekeeper.dueAfterRelease().catch((error: unknown) => {
    deps.logger.warn('the last look at the delayed tasks failed; the recovery sweep promotes them', {
      error: describeError(error),
    });
    return false;
  });
}

/** The tasks a kick was sent for, by key, when the kick named them: the first round takes them without a read. */
function offeredBy(hints: StartHints): Pick<RunOptions, 'offerReady'> {
  const offers = (hints.offers ?? []).map((o) => ({
    id: o.taskId,
    type: o.type,
    shard: o.shard,
    readySk: o.readySk,
  }));
  const where = hints.lookFirst;
  if (where?.taskId && where.readySk)
    offers.push({ id: where.taskId, type: where.type, shard: where.shard, readySk: where.readySk });
  return offers.length > 0 ? { offerReady: offers } : {};
}
