/**
 * The depth gauge: its estimation rules on fixed inputs, exact counts for small backlogs on dynalite,
 * and what recovery publishes. Large backlogs (the estimates and the flat cost) are in
 * queue-depth.slow.test.ts, run by `npm run test:slow`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { powertoolsMetrics, RecordingMetrics, TASK_TYPE_DIMENSION } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import {
  countGroup,
  countFrom,
  planCategoryStrata,
  planStrata,
  remainderSpans,
  stratumProfile,
  type Span,
} from '../shared/store/depth-estimate.js';
import { comparePositions, READY_INDEX, type Position } from '../shared/store/depth-keys.js';
import { queueDepth } from '../shared/store/queue-depth.js';
import { readySortKey } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';

describe('depth estimation rules (fixed inputs)', () => {
  const span: Span = { prefix: [0], level: 1, lo: 1_001, hi: 100_000 };

  it('cuts a span into strata narrowest first, covering it without gaps or overlaps', () => {
    const strata = planStrata(span, 50, 4);
    expect(strata).toHaveLength(4);
    expect(strata[0]).toMatchObject({ lo: 1_001, hi: 1_050 });
    expect(strata.at(-1)!.hi).toBe(100_000);
    for (let i = 1; i < strata.length; i++) {
      expect(strata[i]!.lo).toBe(strata[i - 1]!.hi + 1);
      expect(strata[i]!.hi - strata[i]!.lo).toBeGreaterThan(strata[i - 1]!.hi - strata[i - 1]!.lo);
    }
    // A span narrower than count x the first width is cut evenly.
    expect(planStrata({ ...span, lo: 1, hi: 100 }, 50, 4).map((s) => s.hi - s.lo + 1)).toEqual([
      25, 25, 25, 25,
    ]);
    // A category level (priority ranks) gets one stratum per category.
    expect(planCategoryStrata({ prefix: [], level: 0, lo: 998, hi: 1_002 }, 8)).toHaveLength(5);
  });

  const at = (cell: number, n = 1) => Array.from({ length: n }, () => [0, cell] as Position);
  const end = (positions: Position[], full = true, tag = 'f') => ({
    positions,
    ids: positions.map((_, i) => `${tag}${i}`),
    full,
  });

  it('a stratum read from both ends: all of it when they meet, else the middle at the mean of their densities', () => {
    const stratum: Span = { ...span, lo: 0, hi: 999 };
    // Forward: one entry per cell 0..24; backward (newest first): one per 4 cells, 996 down to 900.
    const forward = end(Array.from({ length: 25 }, (_, i) => [0, i]));
    const backward = end(
      Array.from({ length: 25 }, (_, i) => [0, 996 - 4 * i]),
      true,
      'b',
    );
    const profile = stratumProfile(stratum, forward, backward);
    expect(profile.points).toHaveLength(50);
    expect(profile.segments).toHaveLength(1);
    // Cells 25..899 unread: the mean of 1 and 1/4 per cell (edge cells left out) over 875 cells.
    expect(profile.segments[0]).toMatchObject({ lo: 25, hi: 899 });
    expect(profile.segments[0]!.weight).toBeCloseTo(((1 + 1 / 4) / 2) * 875, 6);

    // Ends that share an entry saw the whole stratum: no estimate.
    const shared = { ...backward, ids: [...backward.ids.slice(0, 24), forward.ids[24]!] };
    expect(stratumProfile(stratum, forward, shared).segments).toEqual([]);
    // An end that stopped short of its limit saw it all.
    expect(stratumProfile(stratum, end(at(3, 10), false), backward).segments).toEqual([]);

    // A tie at the far edge (25 entries due at one instant) is a point, not a density: the backward end
    // went past it, and only the entries past it measure the stratum next to the middle.
    const tieThenSparse = end(
      [...at(999, 25), ...Array.from({ length: 25 }, (_, i) => [0, 800 - 10 * i])],
      true,
      'b',
    );
    const withTie = stratumProfile(stratum, forward, tieThenSparse);
    expect(withTie.segments[0]!.weight).toBeCloseTo(((1 + 1 / 10) / 2) * (559 - 25 + 1), 6);
  });

  it('the unread rest after a burst due at one instant: the rest of the burst by creation time, then the due times up to the tail', () => {
    const last = [1000, 5_000, 70_000];
    const tail = [1000, 9_000, 9_000];
    const ends = new Map<number, Position>([[2, [1000, 5_000, 80_000]]]);
    expect(remainderSpans(last, tail, ends, 3)).toEqual([
      { prefix: [1000, 5_000], level: 2, lo: 70_001, hi: 80_000 },
      { prefix: [1000], level: 1, lo: 5_001, hi: 9_000 },
    ]);
    // Tied on every level: nothing a key range could split.
    expect(remainderSpans(last, last, new Map(), 3)).toEqual([]);
  });

  it('a partition drained further than the sample is matched by position, not counted as deep as the sample', () => {
    // The sample holds cells 0..999 (one entry each); partition 1 was drained up to cell 600.
    const sample = { points: Array.from({ length: 1000 }, (_, i) => [0, i] as Position), segments: [] };
    const heads = [
      { points: sample.points.slice(0, 100), complete: false },
      { points: Array.from({ length: 100 }, (_, i) => [0, 600 + i] as Position), complete: false },
      { points: at(5, 40), complete: true },
    ];
    const group = countGroup(heads, { partition: 0, profile: sample, complete: true });
    // 1000 (the sample) + 99 read before cell 699 + the sample's 301 from cell 699 on + 40.
    expect(group).toEqual({ count: 1000 + 99 + 301 + 40, basis: 'sampled' });
    expect(countFrom({ points: [], segments: [{ ...span, lo: 0, hi: 99, weight: 50 }] }, [0, 50])).toBe(25);
    // Nothing full: counted.
    expect(countGroup([{ points: at(1, 3), complete: true }], undefined)).toEqual({
      count: 3,
      basis: 'counted',
    });
  });

  it('the ready key bounds hold every key readySortKey writes for those levels, and no other', () => {
    const [from, to] = READY_INDEX.bounds([1000], 5_000, 6_000);
    const inside = [readySortKey(0, 5_000, 1, 'a'), readySortKey(0, 6_000, 9_999_999_999_999, 'zz~')];
    const outside = [
      readySortKey(0, 4_999, 9, 'z'),
      readySortKey(0, 6_001, 0, '0'),
      readySortKey(1, 5_500, 0, 'a'),
    ];
    for (const k of inside) expect(k >= String(from) && k <= String(to), k).toBe(true);
    for (const k of outside) expect(k >= String(from) && k <= String(to), k).toBe(false);
    expect(READY_INDEX.position(readySortKey(-3, 5_000, 4_000, 'id-1'))).toEqual([1003, 5_000, 4_000]);
    expect(comparePositions([1, 2, 3], [1, 2, 4])).toBeLessThan(0);
  });
});

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const within = (value: number, truth: number, tolerance: number) =>
  Math.abs(value - truth) <= tolerance * truth;

describe('the depth gauge on dynalite', () => {
  it('counts a small backlog exactly, per type, with each type its oldest due task (fixed clock)', async () => {
    const t = await createTestStore(server.endpoint);
    const start = t.clock.now();
    // A low priority task waits longest: it sorts last in its type's lane.
    await t.store.enqueue({ type: 'mail', owner: 'o', priority: -3 });
    t.clock.advance(1_000);
    for (let i = 0; i < 5; i++) await t.store.enqueue({ type: 'mail', owner: 'o' });
    await t.store.enqueue({ type: 'mail', owner: 'o', priority: 5 });
    t.clock.advance(1_000);
    for (let i = 0; i < 3; i++) await t.store.enqueue({ type: 'sms', owner: 'o' });
    for (let i = 0; i < 4; i++) await t.store.enqueue({ type: 'sms', owner: 'o', delayMs: 60_000 });
    const { claimed } = await t.store.claim({ workerId: 'w', types: ['sms'], max: 2 });
    expect(claimed).toHaveLength(2);

    const depth = await t.store.depth(['mail', 'sms', 'idle', 'mail']);
    expect(depth).toEqual({
      ready: 8,
      leased: 2,
      delayed: 4,
      oldestDueAt: start,
      byType: {
        mail: { ready: 7, basis: 'counted', oldestDueAt: start },
        sms: { ready: 1, basis: 'counted', oldestDueAt: start + 2_000 },
        idle: { ready: 0, basis: 'counted', oldestDueAt: undefined },
      },
      // The four delayed sms tasks fall due together, a minute after they were enqueued.
      nextDueAt: start + 2_000 + 60_000,
      basis: { ready: 'counted', leased: 'counted', delayed: 'counted' },
      exact: true,
    });
  });

  it('a lane read past its limits still sees the oldest of its lowest priority', async () => {
    const t = await createTestStore(server.endpoint);
    const start = t.clock.now();
    await t.store.enqueue({ type: 'mail', owner: 'o', priority: -7 });
    t.clock.advance(5_000);
    for (let i = 0; i < 40; i++) {
      await t.store.enqueue({ type: 'mail', owner: 'o', priority: 1 + (i % 3) });
      t.clock.advance(10);
    }
    const limits = { head: 5, deep: 5, stratumEnd: 3, strata: 5, spanEntries: 30 };
    const depth = await queueDepth(t.store.ctx, ['mail'], limits);
    expect(depth.byType.mail).toMatchObject({ oldestDueAt: start, basis: 'extrapolated' });
    expect(within(depth.ready, 41, 0.25), `${depth.ready} of 41`).toBe(true);
  });
});

describe('what recovery publishes', () => {
  it('the totals as before, and each type its ready count and oldest age under a TaskType dimension', async () => {
    const t = await createTestStore(server.endpoint);
    await t.store.enqueue({ type: 'mail', owner: 'o' });
    t.clock.advance(30_000);
    await t.store.enqueue({ type: 'sms', owner: 'o' });
    await t.store.enqueue({ type: 'sms', owner: 'o', delayMs: 60_000 });
    const logger = new Logger({ serviceName: 'leasehold-recovery', logLevel: 'SILENT' });

    const recorded = new RecordingMetrics();
    await runRecoverySweep(t.store, { clock: t.clock, metrics: recorded, logger }, ['mail', 'sms', 'idle']);
    expect(Object.fromEntries(recorded.gauges)).toEqual({
      QueueDepth: 3,
      ReadyTasks: 2,
      RunningTasks: 0,
      OldestDueAgeMs: 30_000,
    });
    const perType = Object.fromEntries(
      [...recorded.typeGauges].map(([type, g]) => [type, Object.fromEntries(g)]),
    );
    expect(perType).toEqual({
      mail: { ReadyTasks: 1, OldestDueAgeMs: 30_000 },
      sms: { ReadyTasks: 1, OldestDueAgeMs: 0 },
      idle: { ReadyTasks: 0, OldestDueAgeMs: 0 },
    });

    // As EMF: one document with the totals (service only, what the alarms read), one per type.
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let lines: string[];
    try {
      const metrics = powertoolsMetrics('leasehold-recovery');
      await runRecoverySweep(t.store, { clock: t.clock, metrics, logger }, ['mail', 'sms']);
      lines = out.mock.calls.map(([chunk]) => String(chunk));
    } finally {
      out.mockRestore();
    }
    type Emf = Record<string, unknown> & { _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] } };
    const documents = lines.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Emf);
    const dimensions = documents.map((d) => d._aws.CloudWatchMetrics[0]!.Dimensions[0]);
    expect(dimensions).toEqual([
      ['service'],
      ['service', TASK_TYPE_DIMENSION],
      ['service', TASK_TYPE_DIMENSION],
    ]);
    expect(documents[0]).toMatchObject({ ReadyTasks: 2, OldestDueAgeMs: 30_000, QueueDepth: 3 });
    expect(documents.slice(1)).toEqual([
      expect.objectContaining({ [TASK_TYPE_DIMENSION]: 'mail', ReadyTasks: 1, OldestDueAgeMs: 30_000 }),
      expect.objectContaining({ [TASK_TYPE_DIMENSION]: 'sms', ReadyTasks: 1, OldestDueAgeMs: 0 }),
    ]);
  });
});
