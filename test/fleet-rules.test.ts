/** The fleet's pure rules (seats, scaling, kick coalescing) with fixed clocks and seeded randomness. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  timekeeperWanted,
  KickGate,
  runningCount,
  scaleUpDue,
  seatFree,
  seatsToTry,
  seatUntil,
  type Seat,
} from '../shared/fleet/fleet-rules.js';
import { seededRandom } from './support/fleet-fakes.js';
import { TUNING } from '../shared/tuning.js';

const T0 = 1_800_000_000_000;

const held = (index: number, until = T0 + 60_000, holder = `inv-${index}`): Seat => ({
  index,
  holder,
  token: 1,
  until,
});
const released = (index: number): Seat => ({ index, holder: undefined, token: 3, until: 0 });
const seatMap = (...seats: Seat[]) => new Map(seats.map((s) => [s.index, s]));

describe('fleet rules (pure, fixed clock)', () => {
  it('a seat is free when never taken, given back, or held until now or earlier', () => {
    expect(seatFree(undefined, T0)).toBe(true);
    expect(seatFree(released(1), T0)).toBe(true);
    expect(seatFree(held(1, T0 - 1), T0)).toBe(true);
    // `until` is the holder's certain end: at that instant the seat is free again.
    expect(seatFree(held(1, T0), T0)).toBe(true);
    expect(seatFree(held(1, T0 + 1), T0)).toBe(false);
    // A holder without a time (should not happen) still counts as gone only once its until passed.
    expect(seatFree({ index: 2, holder: 'x', token: 1, until: 0 }, T0)).toBe(true);
  });

  it('counts held seats below the cap only', () => {
    const seats = [held(0), held(1, T0), released(2), held(3), held(5), held(9, T0 - 1)];
    expect(runningCount(seats, 10, T0)).toBe(3); // 0, 3, 5
    expect(runningCount(seats, 4, T0)).toBe(2); // 0, 3 (5 is past a lowered cap)
    expect(runningCount(seats, 0, T0)).toBe(0);
    expect(runningCount([], 5, T0)).toBe(0);
    expect(runningCount(seats.values(), 10, T0 - 100)).toBe(5); // 1 and 9 were still held then
  });

  it('tries the timekeeper seat first when it is free, then the other free seats, below the cap only', () => {
    const random = seededRandom(7);
    const first = seatsToTry(new Map(), 5, T0, random);
    expect(first[0]).toBe(TUNING.fleet.timekeeperSeat);
    expect([...first].sort()).toEqual([0, 1, 2, 3, 4]);

    const some = seatsToTry(seatMap(held(1), released(2), held(3, T0 - 1), held(7)), 5, T0, random);
    expect(some[0]).toBe(0);
    expect([...some].sort()).toEqual([0, 2, 3, 4]);

    // The timekeeper's seat held: it is not tried, the rest are.
    const noKeeper = seatsToTry(seatMap(held(0), held(2)), 5, T0, random);
    expect([...noKeeper].sort()).toEqual([1, 3, 4]);

    // Everything held, or a cap of zero: nothing to try.
    expect(seatsToTry(seatMap(held(0), held(1)), 2, T0, random)).toEqual([]);
    expect(seatsToTry(new Map(), 0, T0, random)).toEqual([]);
    // Seats at or above the cap are never tried, even when free.
    expect(seatsToTry(seatMap(held(0), held(1), released(2)), 2, T0, random)).toEqual([]);
  });

  it('orders the non-timekeeper seats at random: the same seed gives the same order, seeds differ', () => {
    const order = (seed: number) => seatsToTry(new Map(), 8, T0, seededRandom(seed));
    expect(order(42)).toEqual(order(42));
    const seconds = new Set<number>();
    const orders = new Set<string>();
    for (let seed = 1; seed <= 200; seed++) {
      const o = order(seed);
      expect(o[0]).toBe(0);
      seconds.add(o[1]!);
      orders.add(o.join(','));
    }
    // Every non-timekeeper seat comes right after the timekeeper's for some seed: invocations
    // starting together spread over the seats instead of all racing for seat 1.
    expect([...seconds].sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(orders.size).toBeGreaterThan(150);
  });

  it('property: seatsToTry gives every free seat below the cap exactly once, the timekeeper first when free', () => {
    const arbSeat = fc.record({
      index: fc.nat(24),
      holder: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
      token: fc.nat(10),
      until: fc.integer({ min: T0 - 5_000, max: T0 + 5_000 }),
    });
    fc.assert(
      fc.property(
        fc.nat(20),
        fc.array(arbSeat, { maxLength: 30 }),
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1 }),
        (cap, seats, draws) => {
          let n = 0;
          const random = () => draws[n++ % draws.length]!;
          const map = new Map(seats.map((s) => [s.index, s]));
          const tried = seatsToTry(map, cap, T0, random);
          expect(new Set(tried).size).toBe(tried.length);
          for (const i of tried) {
            expect(Number.isInteger(i) && i >= 0 && i < cap).toBe(true);
            expect(seatFree(map.get(i), T0)).toBe(true);
          }
          const free = Array.from({ length: cap }, (_, i) => i).filter((i) => seatFree(map.get(i), T0));
          expect([...tried].sort((a, b) => a - b)).toEqual(free);
          if (cap > 0 && seatFree(map.get(TUNING.fleet.timekeeperSeat), T0))
            expect(tried[0]).toBe(TUNING.fleet.timekeeperSeat);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('holds a seat to the invocation end plus the clock skew margin', () => {
    expect(seatUntil(T0, 900_000, 5_000)).toBe(T0 + 905_000);
    expect(seatUntil(T0, 0, 5_000)).toBe(T0 + 5_000);
  });

  it('scales up at most once per interval (the cap is the seats: FleetSeats.reserve)', () => {
    expect(scaleUpDue(T0, Number.NEGATIVE_INFINITY, 1_000)).toBe(true);
    expect(scaleUpDue(T0 + 999, T0, 1_000)).toBe(false);
    expect(scaleUpDue(T0 + 1_000, T0, 1_000)).toBe(true);
    expect(scaleUpDue(T0, T0, 1_000)).toBe(false);
  });

  it('KickGate admits the first kick at once, then at most one per interval; a refused kick does not restart it', () => {
    const gate = new KickGate(250);
    expect(gate.admit(T0)).toBe(true);
    expect(gate.admit(T0)).toBe(false);
    expect(gate.admit(T0 + 100)).toBe(false);
    expect(gate.admit(T0 + 249)).toBe(false);
    // Counted from the admitted kick (T0), not from the refused ones.
    expect(gate.admit(T0 + 250)).toBe(true);
    expect(gate.admit(T0 + 499)).toBe(false);
    expect(gate.admit(T0 + 10_000)).toBe(true);

    const burst = new KickGate(250);
    let admitted = 0;
    for (let i = 0; i < 1_000; i++) if (burst.admit(T0 + (i % 250))) admitted++;
    expect(admitted).toBe(1);
  });
});

describe("timekeeperWanted: whether a delayed task's kick starts a timekeeper", () => {
  it('only when seat 0 is free (never taken, given back, or its holder certainly ended)', () => {
    expect(timekeeperWanted(seatMap(), T0)).toBe(true);
    expect(timekeeperWanted(seatMap(released(0), held(1)), T0)).toBe(true);
    expect(timekeeperWanted(seatMap(held(0)), T0)).toBe(false);
    expect(timekeeperWanted(seatMap(held(0, T0 - 1)), T0)).toBe(true);
  });
});
