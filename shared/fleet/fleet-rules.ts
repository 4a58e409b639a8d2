/**
 * The pure rules of the worker fleet: when a seat is free, which seat an invocation tries first, when
 * a saturated worker adds one more invocation, and how kicks are coalesced. No I/O: the seats
 * (fleet-seats.ts), the invoker and the worker call these with a clock.
 */
import { shuffleInPlace } from '../ids.js';
import { TUNING } from '../tuning.js';

/** A seat as read from the table: free, or held by one worker invocation until `until`. */
export interface Seat {
  index: number;
  holder: string | undefined;
  token: number;
  until: number;
}

/** A seat is free when nobody took it, it was given back, or its holder's invocation has certainly ended. */
export function seatFree(seat: Seat | undefined, now: number): boolean {
  return seat === undefined || seat.holder === undefined || seat.until <= now;
}

/** How many seats are held now (the fleet's running invocations). */
export function runningCount(seats: Iterable<Seat>, cap: number, now: number): number {
  let n = 0;
  for (const s of seats) if (s.index < cap && !seatFree(s, now)) n++;
  return n;
}

/**
 * The seats an invocation tries, in order: the timekeeper's first when it is free (an invocation
 * that finds no timekeeper becomes one, so delayed work always has one while any worker runs), then
 * the other free seats in random order, so invocations starting together rarely try the same one.
 */
export function seatsToTry(
  seats: Map<number, Seat>,
  cap: number,
  now: number,
  random: () => number,
): number[] {
  const free: number[] = [];
  for (let i = 0; i < cap; i++) if (seatFree(seats.get(i), now)) free.push(i);
  const rest = shuffleInPlace(
    free.filter((i) => i !== TUNING.fleet.timekeeperSeat),
    random,
  );
  return free.includes(TUNING.fleet.timekeeperSeat) ? [TUNING.fleet.timekeeperSeat, ...rest] : rest;
}

/**
 * How long a seat is held: to the invocation's end (Lambda stops it at its timeout), plus the clock
 * skew margin, so a seat is never free while its holder may still claim.
 */
export function seatUntil(now: number, remainingMs: number, clockSkewMs: number): number {
  return now + remainingMs + clockSkewMs;
}

/**
 * Scaling up, step one: a worker whose claim round filled every free slot (more work is likely
 * waiting) may add an invocation when it has not added one within `intervalMs`. Each saturated
 * worker adds one, so the fleet at most doubles per interval (1, 2, 4, ... cap), and several
 * deciders acting at once overshoot by at most the fleet's size, which the seats then refuse.
 */
export function scaleUpDue(now: number, lastScaleAt: number, intervalMs: number): boolean {
  return now - lastScaleAt >= intervalMs;
}

/**
 * Whether a delayed task's kick starts a timekeeper: only when seat 0 is free (one that keeps time
 * already sees the task at its next refresh). A due task's kick needs no such rule: it always starts
 * a worker, which at the cap rings a held seat instead of running (fleet-seats.ts, takeOrRing).
 */
export function timekeeperWanted(seats: Map<number, Seat>, now: number): boolean {
  return seatFree(seats.get(TUNING.fleet.timekeeperSeat), now);
}

/**
 * Coalesces kicks: at most one per `intervalMs` from one process, so a burst of enqueues costs one
 * Invoke, not one per task (the tasks enqueued in between go in the next kick, by key). The first
 * enqueue after a quiet spell kicks at once.
 */
export class KickGate {
  private last = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalMs: number) {}

  /** Whether to kick now; a true answer counts as the kick. */
  admit(now: number): boolean {
    if (now - this.last < this.intervalMs) return false;
    this.last = now;
    return true;
  }

  /** How long until the next kick may go (0: now). */
  waitMs(now: number): number {
    return Math.max(0, this.last + this.intervalMs - now);
  }
}

/**
 * Whether a self-started invocation of `generation` may be sent (the scheduled tick, a kick from the
 * API and the fire function start generation 0; each self-start adds one): within the bound always,
 * past it only with a seat reserved for it.
 */
export function chainStartAllowed(generation: number, seatReserved: boolean): boolean {
  return generation <= TUNING.fleet.chainGenerationBound || seatReserved;
}

/**
 * The most worker invocations a minute the fleet can explain: each seat cycles at most once per idle
 * window (an invocation returns after `idleStopMs` without work, and a kick or scale-up refills it),
 * plus the scheduled tick and one bounce per seat (an invocation that found every seat held returns at
 * once). More than this for minutes means invocations are being started outside the seats: a loop.
 */
export function explainedInvocationsPerMinute(cap: number, idleStopMs: number): number {
  return cap * Math.ceil(60_000 / idleStopMs) + cap + 1;
}

/**
 * How far ahead a delayed task is kicked for (the kick starts a timekeeper) and how far ahead a
 * timekeeper looks (and hands over for). A task due later is certainly seen by a scheduled tick: the
 * tick runs only when recovery's queue summary shows work, and a summary written after the enqueue
 * (at most one recovery interval later) comes before the last tick ahead of the due time only if the
 * due time is at least a tick period plus a recovery interval away (plus the schedules' jitter).
 */
export function kickHorizonMs(recoveryIntervalMs: number): number {
  return TUNING.fleet.scheduledTickIntervalMs + recoveryIntervalMs + TUNING.fleet.tickAndSweepSlackMs;
}
