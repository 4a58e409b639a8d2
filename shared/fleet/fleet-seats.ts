/**
 * The fleet's seats: one small item per allowed worker invocation (`FLEET` / `SEAT#n`, n < the cap),
 * each a lease held by one invocation until its end. An invocation claims tasks only while it holds a
 * seat, so however many deciders start invocations at once (kicks, saturated workers, the scheduled
 * tick), at most `cap` run; the others find no free seat and return at once. A seat whose holder died
 * frees itself when its `until` passes (the holder's Lambda timeout, which Lambda enforces).
 *
 * A held seat can be rung (`rings`): an invocation started for work that found every seat held rings
 * one, so its holder looks for that work. The holder reads its own seat when it polls (one item, not
 * the ready partitions: ring-gate.ts) and learns of a ring it did not read for when it gives the seat
 * back (that write returns the item), then starts an invocation that reads. A ring applies only while
 * the take it was aimed at holds the seat, so every ring has exactly one holder to answer it.
 */
import { readPartitionItems } from '../store/partition-items.js';
import type { Clock } from '../clock.js';
import { shuffleInPlace, type RandomSource } from '../ids.js';
import { KEY } from '../table-layout.js';
import { conditionalUpdate, readItem, type WriteTarget } from '../store/conditional-write.js';
import { Expression, type ConditionPart } from '../store/update-expression.js';
import { holdsTokenLease } from '../store/conditions.js';
import { acquireOrUndo, releaseIfHolder } from '../store/lease-item.js';
import { runningCount, seatsToTry, type Seat } from './fleet-rules.js';
import { TUNING } from '../tuning.js';

const FLEET_PARTITION = 'FLEET';

/** Seat 0 (the timekeeper's) moved to the end of an order of seats to try. */
const timekeeperLast = (order: number[]) => [
  ...order.filter((i) => i !== TUNING.fleet.timekeeperSeat),
  ...order.filter((i) => i === TUNING.fleet.timekeeperSeat),
];

const seatKey = (index: number) => ({
  [KEY.partition]: FLEET_PARTITION,
  [KEY.sort]: `SEAT#${String(index).padStart(5, '0')}`,
});

/** The seat this invocation holds: its index and the token that proves it (grows with every take). */
export interface SeatLease {
  index: number;
  holder: string;
  token: number;
  until: number;
}

interface SeatItem {
  sk: string;
  holder?: string;
  token?: number;
  until?: number;
  /** Rings since this take (reset by every take). */
  rings?: number;
}

/** How an invocation takes its seat (take). */
export interface TakeOptions {
  /**
   * Seat 0 (the timekeeper's) last, not first, and a random other seat first, without a read: an
   * invocation handed its tasks by key returns as soon as they end, and a timekeeper's reads and its
   * last look would cost more than its work.
   */
  timekeeperLast?: boolean;
  /** Read the seats strongly consistently: then none taken means every seat was held at that read. */
  consistent?: boolean;
}

/** A seat given back: whether it still was ours, and how often it was rung while we held it. */
export interface GivenBack {
  released: boolean;
  rings: number;
}

/**
 * Taking a seat: it is free as we read it. Another invocation taking it at the same time, or one that
 * took it after our read, makes this fail, and we try the next free seat.
 */
const seatStillFree =
  (now: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('holder')}) OR ${e.name('until')} <= ${e.value(now)}`;

/**
 * Giving a seat back, or adopting one reserved for us: we still hold this very take of it (a later
 * holder's take is never undone, and a reservation that ran out and was taken is not ours any more).
 */
const holdsSeat = (lease: Pick<SeatLease, 'holder' | 'token'>): ConditionPart =>
  holdsTokenLease(lease.holder, lease.token, SEAT_LEASE.tokenAttribute);

/** A seat is a lease item (lease-item.ts) with these attribute names. */
const SEAT_LEASE = { tokenAttribute: 'token', expiryAttribute: 'until' } as const;

/**
 * Ringing a held seat: the take we read still holds it and has not run out. A seat given back (or
 * taken over) since our read would leave the ring to nobody; we then take or ring another.
 */
const heldByThatTake =
  (seat: Pick<Seat, 'holder' | 'token'>, now: number): ConditionPart =>
  (e) =>
    `${e.name('holder')} = ${e.value(seat.holder)} AND ${e.name('token')} = ${e.value(seat.token)} AND ${e.name('until')} > ${e.value(now)}`;

/** The seat reserved for an invocation, as its start event carries it. */
export type SeatReservation = Pick<SeatLease, 'index' | 'holder' | 'token'>;

export interface FleetSeatsOptions {
  target: WriteTarget;
  clock: Clock;
  random: RandomSource;
  /** The most worker invocations that may run at once. */
  cap: number;
}

export class FleetSeats {
  constructor(private readonly options: FleetSeatsOptions) {}

  get cap(): number {
    return this.options.cap;
  }

  /**
   * Every seat item (one Query; eventually consistent unless asked: a stale view only costs a refused
   * take, but a decision to ring must see every seat as it is).
   */
  async read(options: { consistent?: boolean } = {}): Promise<Map<number, Seat>> {
    const { target } = this.options;
    const seats = new Map<number, Seat>();
    const items = await readPartitionItems<SeatItem>({
      doc: target.doc,
      tableName: target.tableName,
      partition: FLEET_PARTITION,
      deadlineMs: target.deadlineMs,
      ...(options.consistent ? { consistent: true } : {}),
    });
    for (const item of items) {
      const index = Number(item.sk.slice('SEAT#'.length));
      seats.set(index, { index, holder: item.holder, token: item.token ?? 0, until: item.until ?? 0 });
    }
    return seats;
  }

  /**
   * Takes a free seat for `holder` until `until`, or undefined when every seat is held. Seat 0 (the
   * timekeeper's) is tried first without a read: an invocation started into a quiet fleet (a kick)
   * then claims after one write, not a read and a write. Otherwise the seats the read shows free are
   * tried in turn; a refused take (another invocation was faster) moves on to the next.
   */
  async take(holder: string, until: number, options: TakeOptions = {}): Promise<SeatLease | undefined> {
    const { clock, random, cap } = this.options;
    const first =
      options.timekeeperLast && cap > 1 ? 1 + Math.floor(random() * (cap - 1)) : TUNING.fleet.timekeeperSeat;
    const lease = await this.takeSeat(first, holder, until);
    if (lease) return lease;
    const seats = await this.read(options);
    const order = seatsToTry(seats, cap, clock.now(), random).filter((i) => i !== first);
    for (const index of options.timekeeperLast ? timekeeperLast(order) : order) {
      const taken = await this.takeSeat(index, holder, until);
      if (taken) return taken;
    }
    return undefined;
  }

  /**
   * For an invocation started for work that found no seat: reads the seats strongly consistently and
   * takes one freed since, or rings a held one (its holder then looks for the work). A refused ring
   * means that seat changed hands after the read (its holder gave it back, and may have taken it again
   * with a new token), so the seats are read again: the next read finds it free or held by the newer
   * take. 'none' only when every ring of every look was refused, which a later kick or tick mends.
   */
  async takeOrRing(
    holder: string,
    until: number,
  ): Promise<{ lease: SeatLease } | { rung: number } | { none: true }> {
    const { clock, random, cap } = this.options;
    for (let look = 0; look < TUNING.fleet.takeOrRingLooks; look++) {
      const seats = await this.read({ consistent: true });
      const free = timekeeperLast(seatsToTry(seats, cap, clock.now(), random));
      for (const index of free) {
        const lease = await this.takeSeat(index, holder, until);
        if (lease) return { lease };
      }
      const rung = await this.ringOneOf(seats, free);
      if (rung !== undefined) return { rung };
    }
    return { none: true };
  }

  /**
   * For a kick that found the fleet at its cap: reads the seats strongly consistently and rings a held
   * one, so its holder looks for the kicked tasks; 'free' when a seat is free after all (or every ring
   * was refused): the kick then starts an invocation as usual.
   */
  async ringIfFull(): Promise<'rung' | 'free'> {
    const { clock, random, cap } = this.options;
    const seats = await this.read({ consistent: true });
    const free = seatsToTry(seats, cap, clock.now(), random);
    if (free.length > 0) return 'free';
    return (await this.ringOneOf(seats, free)) === undefined ? 'free' : 'rung';
  }

  /** Rings one held seat (random order; the index), or undefined when every ring was refused. */
  private async ringOneOf(seats: Map<number, Seat>, free: number[]): Promise<number | undefined> {
    const { random, cap } = this.options;
    const held = [...seats.values()].filter((s) => s.index < cap && !free.includes(s.index));
    for (const seat of shuffleInPlace(held, random)) if (await this.ring(seat)) return seat.index;
    return undefined;
  }

  /** Rings a held seat (see the file's comment); false when that take no longer holds it. */
  async ring(seat: Seat): Promise<boolean> {
    const e = new Expression().require(heldByThatTake(seat, this.options.clock.now())).add('rings', 1);
    return (await conditionalUpdate(this.options.target, seatKey(seat.index), e, { resends: 1 })).applied;
  }

  /** How often the seat was rung since `lease` took it (one strongly consistent GetItem); 0 once it is not ours. */
  async ringsOf(lease: SeatLease): Promise<number> {
    const item = await readItem<SeatItem>(this.options.target, seatKey(lease.index));
    return item?.holder === lease.holder && item.token === lease.token ? (item.rings ?? 0) : 0;
  }

  /**
   * Takes a free seat for an invocation about to be started, which adopts it: the fleet counts
   * invocations being started, so deciders acting at once never start more than the free seats (each
   * one started past the cap would be a cold start for nothing). Seat 0 comes last: the invocation that
   * adopts it keeps time too, which a kicked one (it takes seat 0 first) does better, but a backlog at
   * the cap whose timekeeper returned must still refill it, or the fleet runs a seat short until the
   * next tick. Undefined when every seat is held.
   */
  async reserve(): Promise<SeatLease | undefined> {
    const { clock, random, cap } = this.options;
    const holder = this.startingHolder();
    const seats = await this.read();
    for (const index of timekeeperLast(seatsToTry(seats, cap, clock.now(), random))) {
      const lease = await this.takeSeat(index, holder, clock.now() + TUNING.fleet.reservationMs);
      if (lease) return lease;
    }
    return undefined;
  }

  /**
   * Reserves seat 0 for a timekeeper about to be started (a hand-over deep in a chain, which is started
   * only into a seat of its own: tuning.ts, TUNING.fleet.chainGenerationBound). Undefined when another
   * invocation keeps time already, and then none needs starting.
   */
  reserveTimekeeper(): Promise<SeatLease | undefined> {
    return this.takeSeat(
      TUNING.fleet.timekeeperSeat,
      this.startingHolder(),
      this.options.clock.now() + TUNING.fleet.reservationMs,
    );
  }

  /** The holder name of a seat reserved for an invocation not started yet. */
  private startingHolder(): string {
    return `starting/${Math.floor(this.options.random() * 2 ** 48).toString(36)}`;
  }

  /**
   * The started invocation takes over the seat reserved for it, until `until`; undefined when it is no
   * longer its own (it started after the reservation ran out and another invocation took the seat).
   */
  async adopt(reserved: SeatReservation, holder: string, until: number): Promise<SeatLease | undefined> {
    return this.takeSeat(reserved.index, holder, until, holdsSeat(reserved));
  }

  /** Takes seat 0 (the timekeeper's) only, or undefined when another invocation keeps time. */
  takeTimekeeper(holder: string, until: number): Promise<SeatLease | undefined> {
    return this.takeSeat(TUNING.fleet.timekeeperSeat, holder, until);
  }

  private async takeSeat(
    index: number,
    holder: string,
    until: number,
    condition: ConditionPart = seatStillFree(this.options.clock.now()),
  ): Promise<SeatLease | undefined> {
    const { clock, target } = this.options;
    // A take whose answer was lost and could not be learned is undone if it applied (and the error
    // thrown): a seat is never held by an invocation that does not know it holds it.
    const written = await acquireOrUndo(target, seatKey(index), {
      ...SEAT_LEASE,
      holder,
      leaseUntil: until,
      free: condition,
      fields: { takenAt: clock.now(), rings: 0 },
      resends: 1,
    });
    return written.applied ? { index, holder, token: written.item.token!, until } : undefined;
  }

  /** Gives the seat back (when its holder returns), so the next invocation need not wait for `until`. */
  async release(lease: SeatLease): Promise<boolean> {
    return (await this.giveBack(lease)).released;
  }

  /** Gives the seat back and says how often it was rung while held (the write returns the item: no read). */
  async giveBack(lease: SeatLease): Promise<GivenBack> {
    const written = await releaseIfHolder(
      this.options.target,
      seatKey(lease.index),
      { ...SEAT_LEASE, holder: lease.holder, token: lease.token },
      [],
      { resends: 1 },
    );
    return written.applied
      ? { released: true, rings: (written.item as SeatItem).rings ?? 0 }
      : { released: false, rings: 0 };
  }

  /** How many invocations hold a seat now. */
  async running(): Promise<number> {
    return runningCount((await this.read()).values(), this.cap, this.options.clock.now());
  }
}
