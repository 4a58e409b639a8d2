/** The claim round's decisions on their own (pure: no store, randomness given), as properties. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defaultsEmpty,
  endsRoundAfter,
  headsToTry,
  othersHeadDue,
  othersHeadWaitMs,
  ownsHead,
  placedRange,
  roundSteps,
  type RoundEnd,
  readWindow,
  shuffleWithinPriority,
  spareMaxAgeMs,
  visitOrder,
  visitorRank,
  waitsForOthers,
  waveSize,
} from '../shared/store/claim-plan.js';
import { readyPriorityPrefix, readySortKey, SHARD_COUNT, shardForId } from '../shared/table-layout.js';
import { TUNING } from '../shared/tuning.js';

/** Some type index for an id (a test's own spread of ids over types). */
const fnvPick = (id: string) => id.length + id.charCodeAt(0);
const typeNames = fc.uniqueArray(fc.stringMatching(/^[a-z]{1,6}$/), { minLength: 1, maxLength: 5 });
/** A seeded random source: the same seed, the same order. */
const seeded = (seed: number) => {
  let s = seed >>> 0 || 1;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
};

describe('claim plan', () => {
  it('a read asks for the room plus the spare, widened when picking at random, always within bounds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 50 }),
        fc.boolean(),
        (room, spare, randomized) => {
          const n = readWindow(room, spare, randomized);
          expect(n).toBeGreaterThanOrEqual(TUNING.claim.minWindow);
          expect(n).toBeLessThanOrEqual(TUNING.claim.maxWindow);
          // Never fewer than the room when the room fits in a read.
          if (room <= TUNING.claim.maxWindow) expect(n).toBeGreaterThanOrEqual(room);
          // Picking at random never reads fewer heads than picking in order.
          expect(readWindow(room, spare, true)).toBeGreaterThanOrEqual(readWindow(room, spare, false));
        },
      ),
    );
    expect(readWindow(40, 2, false)).toBe(41);
    expect(readWindow(1, 1, false)).toBe(TUNING.claim.minWindow);
  });

  it('visits every partition of every served type exactly once: hints first, then its own, then the rest', () => {
    fc.assert(
      fc.property(
        typeNames,
        fc.nat(),
        fc.integer({ min: 1 }),
        fc.array(fc.tuple(fc.nat(4), fc.nat(SHARD_COUNT - 1)), { maxLength: 4 }),
        (types, start, seed, hintPicks) => {
          const hints = [
            ...new Map(
              hintPicks.map(([t, shard]) => {
                const type = types[t % types.length]!;
                return [`${type}#${shard}`, { type, shard }];
              }),
            ).values(),
          ];
          const order = visitOrder(types, hints, (count) => start % count, seeded(seed));
          const keys = order.map((p) => `${p.type}#${p.shard}`);
          expect(new Set(keys).size).toBe(types.length * SHARD_COUNT);
          expect(order.slice(0, hints.length)).toEqual(hints);
          const all = types.flatMap((type) =>
            Array.from({ length: SHARD_COUNT }, (_, shard) => `${type}#${shard}`),
          );
          const own = all[start % all.length]!;
          if (!hints.some((h) => `${h.type}#${h.shard}` === own)) expect(keys[hints.length]).toBe(own);
        },
      ),
    );
  });

  it('placed, a round reads in turn from its own partition; places spread evenly, distinct while no more than the partitions', () => {
    fc.assert(
      fc.property(typeNames, fc.integer({ min: 1, max: 128 }), fc.nat(), (types, of, pick) => {
        const count = types.length * SHARD_COUNT;
        const index = pick % of;
        const start = placedRange({ index, of }, count)?.start;
        // More places than partitions: they share them (the next test).
        if (of > count) return;
        expect(start).toBeGreaterThanOrEqual(0);
        expect(start).toBeLessThan(count);
        const order = visitOrder(
          types,
          [],
          () => start!,
          seeded(1),
          () => true,
        );
        const all = types.flatMap((type) =>
          Array.from({ length: SHARD_COUNT }, (_, shard) => ({ type, shard })),
        );
        expect(order).toEqual([...all.slice(start), ...all.slice(0, start)]);
        const starts = Array.from({ length: of }, (_, i) => placedRange({ index: i, of }, count)!.start);
        // In order, each place's partitions up to the next place's its own.
        expect(starts).toEqual([...starts].sort((a, b) => a - b));
        expect(new Set(starts).size).toBe(of);
      }),
    );
    // Eight workers over one type's sixteen shards: every other shard.
    expect(Array.from({ length: 8 }, (_, i) => placedRange({ index: i, of: 8 }, SHARD_COUNT)!.start)).toEqual(
      [0, 2, 4, 6, 8, 10, 12, 14],
    );
  });

  it('every head of a partition is owned by exactly one place: its range, or its slice when places share the partition', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.stringMatching(/^[a-z0-9]{4,12}$/), { minLength: 1, maxLength: 40 }),
        (types, of, ids) => {
          const count = types * SHARD_COUNT;
          const shares = Array.from({ length: of }, (_, index) => placedRange({ index, of }, count)!);
          for (const share of shares) {
            expect(share.slice).toBeGreaterThanOrEqual(0);
            expect(share.slice).toBeLessThan(share.sharers);
            // A share of partitions, or one partition with its sharers: never both.
            expect(share.sharers === 1 || share.size === 1).toBe(true);
          }
          for (const id of ids) {
            const partition = (fnvPick(id) % types) * SHARD_COUNT + shardForId(id);
            const owners = shares.filter((share) => ownsHead(share, partition, id));
            expect(owners).toHaveLength(1);
          }
          expect(ids.every((id) => ownsHead(undefined, 0, id))).toBe(true);
        },
      ),
    );
    // 32 workers on one type's 16 shards: two on each, each with half of its heads.
    const shares = Array.from({ length: 32 }, (_, index) => placedRange({ index, of: 32 }, SHARD_COUNT)!);
    expect(shares.map((s) => s.start)).toEqual(Array.from({ length: 32 }, (_, i) => Math.floor(i / 2)));
    expect(shares.map((s) => s.slice)).toEqual(Array.from({ length: 32 }, (_, i) => i % 2));
    const ids = Array.from({ length: 400 }, (_, i) => `task-${i}`).filter((id) => shardForId(id) === 3);
    const first = ids.filter((id) => ownsHead(shares[6], 3, id)).length;
    // The slices split a shard's heads about evenly (the shard's own hash bits are not used again).
    expect(first).toBeGreaterThan(ids.length * 0.3);
    expect(first).toBeLessThan(ids.length * 0.7);
  });

  it('visitors wait in line for other places heads only when places outnumber partitions: one place per rank, a step more each rank', () => {
    const step = TUNING.claim.othersHeadStepMs;
    expect(waitsForOthers({ index: 0, of: 32 }, SHARD_COUNT)).toBe(true);
    expect(waitsForOthers({ index: 0, of: 16 }, SHARD_COUNT)).toBe(false);
    expect(waitsForOthers(undefined, SHARD_COUNT)).toBe(false);
    expect(othersHeadWaitMs(0)).toBe(step);
    expect(othersHeadWaitMs(2)).toBe(3 * step);
    // The line ends: past its last rank every visitor waits as long as that rank.
    const last = TUNING.claim.othersHeadMaxSteps;
    expect(othersHeadWaitMs(last - 1)).toBe(last * step);
    expect(othersHeadWaitMs(31)).toBe(last * step);
    expect(othersHeadDue(1_000, 1_000 + step - 1, 0)).toBe(false);
    expect(othersHeadDue(1_000, 1_000 + step, 0)).toBe(true);
    expect(othersHeadDue(1_000, 1_000 + 2 * step - 1, 1)).toBe(false);
    // Each head has one place at each rank: no two visitors' turns for it start together.
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9]{4,16}$/), fc.integer({ min: 1, max: 64 }), (id, of) => {
        const ranks = Array.from({ length: of }, (_, index) => visitorRank(id, { index, of }));
        expect([...ranks].sort((a, b) => a - b)).toEqual(Array.from({ length: of }, (_, r) => r));
      }),
    );
    expect(spareMaxAgeMs(1_000, false)).toBe(1_000);
    expect(spareMaxAgeMs(1_000, true)).toBeLessThan(step);
    expect(spareMaxAgeMs(50, true)).toBe(50);
  });

  it('two workers with other random sources leave their own partition in different orders', () => {
    const a = visitOrder(['t'], [], () => 0, seeded(1)).map((p) => p.shard);
    const b = visitOrder(['t'], [], () => 0, seeded(2)).map((p) => p.shard);
    expect(a[0]).toBe(0);
    expect(b[0]).toBe(0);
    expect(a.slice(1)).not.toEqual(b.slice(1));
  });

  it('waves grow from one partition, the hinted ones a wave of their own, and cover any count of partitions', () => {
    expect([0, 1, 2, 3, 4, 5].map((w) => waveSize(w, 0))).toEqual([1, 1, 2, 4, 8, 8]);
    expect([0, 1, 2].map((w) => waveSize(w, 3))).toEqual([3, 1, 1]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1700 }), fc.nat(4), (partitions, hints) => {
        let covered = 0;
        let waves = 0;
        for (let w = 0; covered < partitions; w++, waves++) {
          const size = waveSize(w, hints);
          expect(size).toBeGreaterThan(0);
          covered += size;
        }
        // Sixteen shards of one type: five waves at most (seven with hints), not sixteen reads in a row.
        if (partitions <= SHARD_COUNT) expect(waves).toBeLessThanOrEqual(hints > 0 ? 7 : 5);
      }),
    );
  });

  it('contended, a worker tries a share of a read; calm, all of it; never more than its room', () => {
    fc.assert(
      fc.property(fc.nat(200), fc.integer({ min: 1, max: 1000 }), fc.boolean(), (read, room, contended) => {
        const n = headsToTry(read, room, contended);
        expect(n).toBeLessThanOrEqual(Math.min(read, room));
        if (read > 0) expect(n).toBeGreaterThan(0);
        if (!contended) expect(n).toBe(Math.min(read, room));
      }),
    );
    expect(headsToTry(64, 100, true)).toBe(8);
  });

  it('the steps of a round keep claim order: undo first, above the default before it, the default before below it', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), (handedFirst, randomized) => {
        const steps = roundSteps({ handedFirst, randomized }).map((s) => s.step);
        const at = (name: string) => steps.indexOf(name as (typeof steps)[number]);
        expect(steps[0]).toBe('undoUnknown');
        expect(steps.at(-1)).toBe('belowDefault');
        // Each step once, but the offered ones: before the lanes too when the run was handed its tasks.
        expect(steps.filter((s) => s === 'offered')).toHaveLength(handedFirst ? 2 : 1);
        expect(new Set(steps.filter((s) => s !== 'offered')).size).toBe(steps.length - (handedFirst ? 2 : 1));
        expect(steps.indexOf('offered') < at('lanesAbove')).toBe(handedFirst);
        // Above the default, then what is known by key or offered due, then what must be read.
        expect(at('lanesAbove')).toBeLessThan(at('dueDirect'));
        expect(at('dueDirect')).toBeLessThan(at('shards'));
        expect(at('shards')).toBeLessThan(at('belowDefault'));
        // No ready read while offered due tasks remain: dueDirect ends the round if they do.
        const due = roundSteps({ handedFirst, randomized }).find((s) => s.step === 'dueDirect')!;
        expect(endsRoundAfter(due.endsRound, { won: 0 }, 1)).toBe(true);
        // Contended, no spare heads (others read them too); calm, right before the shards.
        if (randomized) expect(at('spare')).toBe(-1);
        else expect(at('spare')).toBe(at('shards') - 1);
      }),
    );
  });

  it('a step ends the round only by its rule', () => {
    const rules: RoundEnd[] = ['won', 'dueWaiting', 'endedEarly', 'never'];
    fc.assert(
      fc.property(
        fc.constantFrom(...rules),
        fc.nat(5),
        fc.boolean(),
        fc.nat(5),
        (rule, won, endedEarly, dueWaiting) => {
          const ends = endsRoundAfter(rule, { won, endedEarly }, dueWaiting);
          const expected = { won: won > 0, dueWaiting: dueWaiting > 0, endedEarly, never: false }[rule];
          expect(ends).toBe(expected);
        },
      ),
    );
  });

  it('work below the default waits while any visited partition may hold default work', () => {
    const parts = [
      { type: 'a', shard: 0 },
      { type: 'a', shard: 1 },
    ];
    expect(defaultsEmpty(parts, () => true)).toBe(true);
    expect(defaultsEmpty(parts, (p) => p.shard === 0)).toBe(false);
  });

  it('shuffles heads only among equal priorities: the order of priorities is kept', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.uuid()), { maxLength: 40 }),
        fc.integer({ min: 1 }),
        (rows, seed) => {
          const heads = rows
            .map(([p, id]) => ({ id, readySk: readySortKey(p, 1_000, 1_000, id) }))
            .sort((x, y) => (x.readySk < y.readySk ? -1 : 1));
          const shuffled = [...heads];
          shuffleWithinPriority(shuffled, seeded(seed));
          expect(shuffled.map((h) => readyPriorityPrefix(h.readySk))).toEqual(
            heads.map((h) => readyPriorityPrefix(h.readySk)),
          );
          expect([...shuffled].sort((x, y) => (x.readySk < y.readySk ? -1 : 1))).toEqual(heads);
        },
      ),
    );
  });
});
