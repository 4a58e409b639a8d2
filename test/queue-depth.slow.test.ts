/**
 * The depth gauge on large backlogs (thousands of tasks written per test, about 25 s in all): its cost
 * stays about the same whatever the backlog, and its estimates stay within a stated tolerance past its
 * head pages. Its own script (`npm run test:slow`, run by CI after `npm test`) keeps `npm test` under
 * five minutes on two cores; the exact counts and the estimation rules are in queue-depth.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnqueueInput } from '../shared/task-inputs.js';
import { DEPTH_LIMITS, queueDepth } from '../shared/store/queue-depth.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { seedCreatedOverTime } from '../bench/measures/depth-gauge.js';
import { seedEnqueued } from './support/timekeeper-seed.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** The gauge for `types`, with the requests and read units it cost. */
async function gauge(t: TestStore, types: string[]) {
  t.meter.reset();
  const depth = await t.store.depth(types);
  return { depth, queries: t.meter.count('Query'), units: t.meter.capacity.get('Query') ?? 0 };
}

/**
 * Each test writes thousands of items to dynalite first: CPU-bound, about 16 s here and 2.5 times that
 * when the machine is slow (a clean-clone CI run timed out at the default 30 s while every slow file
 * took 2 to 2.5 times its usual time). What it asserts is cost and precision, not speed.
 */
const SEEDED_TEST_TIMEOUT_MS = 120_000;

const within = (value: number, truth: number, tolerance: number) =>
  Math.abs(value - truth) <= tolerance * truth;

describe('the depth gauge on large backlogs (dynalite)', () => {
  it(
    'costs about the same for 0, 2,000 and 20,000 waiting tasks, and estimates them within 10 %',
    async () => {
      const t = await createTestStore(server.endpoint);
      const from = t.clock.now();
      const input = (n: number): EnqueueInput => ({ type: 'steady', owner: 'o', payload: { n } });
      const empty = await gauge(t, ['steady']);
      await seedCreatedOverTime(t, { count: 2_000, perMs: 4, from, input, prefix: 'a' });
      const small = await gauge(t, ['steady']);
      await seedCreatedOverTime(t, { count: 18_000, perMs: 4, from: from + 500, input, prefix: 'b' });
      const large = await gauge(t, ['steady']);
      const figures = { empty, small, large };
      console.log(
        'depth gauge at 0 / 2,000 / 20,000 waiting:',
        Object.entries(figures)
          .map(
            ([k, f]) => `${k} ${f.depth.ready} (${f.depth.basis.ready}) ${f.queries} queries ${f.units} RCU`,
          )
          .join('; '),
      );

      expect(empty.depth).toMatchObject({ ready: 0, exact: true, oldestDueAt: undefined });
      expect(small.depth.byType.steady).toMatchObject({ basis: 'sampled', oldestDueAt: from });
      expect(large.depth.byType.steady).toMatchObject({ basis: 'extrapolated', oldestDueAt: from });
      expect(large.depth.exact).toBe(false);
      expect(within(small.depth.ready, 2_000, 0.1), `${small.depth.ready} of 2,000`).toBe(true);
      expect(within(large.depth.ready, 20_000, 0.1), `${large.depth.ready} of 20,000`).toBe(true);

      // 17 head pages for the type, 32 for the sweep partitions and 1 for the type controls (which types
      // have rotated tasks to count); a deep group adds a bounded few: its further page, a tail probe, a
      // group-end probe, and two ends per stratum (each maybe read twice).
      expect(empty.queries).toBe(17 + 32 + 1);
      expect(small.queries - empty.queries).toBe(1);
      expect(large.queries - empty.queries).toBeLessThanOrEqual(1 + 1 + 1 + 2 * 2 * DEPTH_LIMITS.strata);
      // Reading every entry, as the gauge once did, cost about 20,000 x 145 bytes / 4 KB / 2 = 350 units.
      expect(large.units).toBeLessThanOrEqual(1.5 * small.units);
      expect(large.units).toBeLessThan(70);
    },
    SEEDED_TEST_TIMEOUT_MS,
  );

  it(
    'estimates a burst followed by a trickle within 10 %: due at one instant, or enqueued at once',
    async () => {
      const t = await createTestStore(server.endpoint);
      const from = t.clock.now();
      const task =
        (type: string, availableAt?: number) =>
        (n: number): EnqueueInput => ({
          type,
          owner: 'o',
          payload: { n },
          ...(availableAt === undefined ? {} : { availableAt }),
        });
      // 8,000 tasks all due at `from`, created over 2 s (enqueued with an availableAt, or promoted from the
      // delay partitions at once), then 1,500 more arriving one a millisecond a minute later.
      await seedCreatedOverTime(t, {
        count: 8_000,
        perMs: 4,
        from: from + 60_000,
        input: task('due', from),
        prefix: 'c',
      });
      await seedCreatedOverTime(t, {
        count: 1_500,
        perMs: 1,
        from: from + 120_000,
        input: task('due'),
        prefix: 'd',
      });
      // 8,000 enqueued in half a second, then one task every 3.6 s for an hour.
      await seedCreatedOverTime(t, { count: 8_000, perMs: 16, from, input: task('spike'), prefix: 'e' });
      const trickle = (n: number) => ({ ...task('spike')(n), availableAt: from + 1_000 + 3_600 * n });
      await Promise.all(
        Array.from({ length: 1_000 }, (_, n) => n).map((n) =>
          seedEnqueued({ ...t, storeClock: { now: () => from + 1_000 + 3_600 * n } }, [trickle(n)], `s${n}-`),
        ),
      );
      t.clock.set(from + 3_700_000);
      const { depth, queries } = await gauge(t, ['due', 'spike']);
      console.log(
        `depth gauge on two bursts followed by a trickle: ${JSON.stringify(depth.byType)}, ${queries} queries`,
      );
      expect(depth.byType.due).toMatchObject({ basis: 'extrapolated', oldestDueAt: from });
      expect(depth.byType.spike).toMatchObject({ basis: 'extrapolated', oldestDueAt: from });
      expect(within(depth.byType.due!.ready, 9_500, 0.1), `${depth.byType.due!.ready} of 9,500`).toBe(true);
      expect(within(depth.byType.spike!.ready, 9_000, 0.1), `${depth.byType.spike!.ready} of 9,000`).toBe(
        true,
      );
    },
    SEEDED_TEST_TIMEOUT_MS,
  );

  it(
    'estimates the delay and lease partitions the same bounded way (small limits, so a small backlog is deep)',
    async () => {
      const t = await createTestStore(server.endpoint);
      const from = t.clock.now();
      // Small limits, but a head page no shorter than a claim's window (32 heads for 4 tasks): claims
      // take from it at random, and past it a partition is as it was written.
      const limits = { head: 40, deep: 10, stratumEnd: 10, strata: 4, spanEntries: 160 };
      const later = (n: number): EnqueueInput => ({
        type: 'later',
        owner: 'o',
        payload: { n },
        delayMs: 3_600_000,
      });
      const now = (n: number): EnqueueInput => ({ type: 'now', owner: 'o', payload: { n } });
      await seedCreatedOverTime(t, { count: 3_000, perMs: 2, from, input: later, prefix: 'e' });
      await seedCreatedOverTime(t, { count: 2_000, perMs: 4, from, input: now, prefix: 'f' });
      // Claims of a few tasks a millisecond by eight workers, as a fleet takes them.
      t.clock.set(from + 1_000);
      let leased = 0;
      for (let round = 0; round < 250; round++) {
        t.clock.advance(1);
        leased += (await t.store.claim({ workerId: `w${round % 8}`, types: ['now'], max: 4 })).claimed.length;
      }
      const depth = await queueDepth(t.store.ctx, ['now'], limits);
      console.log(
        `delay/lease partitions: delayed ${depth.delayed} of 3,000, leased ${depth.leased} of ${leased}`,
      );
      expect(depth.basis).toMatchObject({
        ready: 'extrapolated',
        leased: 'extrapolated',
        delayed: 'extrapolated',
      });
      expect(within(depth.delayed, 3_000, 0.1), `${depth.delayed} of 3,000`).toBe(true);
      expect(within(depth.leased, leased, 0.1), `${depth.leased} of ${leased}`).toBe(true);
      expect(within(depth.ready, 2_000 - leased, 0.1), `${depth.ready} of ${2_000 - leased}`).toBe(true);
    },
    SEEDED_TEST_TIMEOUT_MS,
  );
});
