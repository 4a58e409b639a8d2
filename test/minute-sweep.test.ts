/**
 * The recovery Lambda's minute (store/minute-sweep.ts): each sweep partition read once for both the
 * fixes and the gauges. Its first-page rule on fixed inputs; on dynalite, the same fixes and figures as
 * recovery followed by the gauge, for the gauge's queries alone, and a budget cut inside a head page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageFromHead, type SweepHeadPage } from '../shared/store/recovery.js';
import { INDEX } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const entry = (n: number) => ({
  pk: `TASK#t${n}`,
  sk: 'TASK',
  [INDEX.delay.partition]: 'DELAY#0',
  [INDEX.delay.sort]: n,
});
const head = (sorts: number[], next?: Record<string, unknown>): SweepHeadPage => ({
  entries: sorts.map(entry),
  next,
});

describe('the first page from a head page read already (fixed inputs)', () => {
  it('takes the due prefix, and stops where an entry not yet due was read', () => {
    const page = pageFromHead(head([1, 2, 3, 5, 8], { more: 1 }), 'DELAY#0', 4, 100);
    expect(page.entries.map((e) => e[INDEX.delay.sort])).toEqual([1, 2, 3]);
    expect(page.next).toBeUndefined();
  });

  it('cut by the budget, goes on after the last entry taken', () => {
    const page = pageFromHead(head([1, 2, 3, 5, 8]), 'DELAY#0', 10, 2);
    expect(page.entries).toHaveLength(2);
    expect(page.next).toEqual(entry(2));
  });

  it('every entry of a full head due: goes on where the head ended; of a short head: done', () => {
    expect(pageFromHead(head([1, 2, 3], { after: 3 }), 'DELAY#0', 10, 100).next).toEqual({ after: 3 });
    expect(pageFromHead(head([1, 2, 3]), 'DELAY#0', 10, 100).next).toBeUndefined();
    expect(pageFromHead(head([]), 'DELAY#0', 10, 100)).toEqual({ entries: [], next: undefined });
  });
});

const expire = (s: TestStore) => s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1);
const running = async (s: TestStore) => (await s.scanAll()).filter((i) => i.status === 'RUNNING').length;

describe('one read of each sweep partition for the fixes and the gauges (dynalite)', () => {
  it('fixes and counts what recovery and then the gauge would, for the gauge’s queries alone', async () => {
    const s = await createTestStore(server.endpoint);
    for (let i = 0; i < 6; i++) await s.store.enqueue({ type: 'a', owner: 'o', maxAttempts: 3 });
    const held = await s.store.claim({ workerId: 'doomed', types: ['a'], max: 4 });
    expect(held.claimed).toHaveLength(4);
    for (let i = 0; i < 3; i++) await s.store.enqueue({ type: 'b', owner: 'o', delayMs: 1_000 });
    for (let i = 0; i < 2; i++) await s.store.enqueue({ type: 'b', owner: 'o', delayMs: 3_600_000 });
    expire(s);

    s.meter.reset();
    const { report, depth } = await s.store.sweepAndMeasure(['a', 'b']);
    const sweepQueries = s.meter.count('Query');
    expect(report).toMatchObject({ requeued: 4, promoted: 3, failed: 0, truncated: false, errors: [] });
    expect(depth).toMatchObject({ ready: 9, leased: 0, delayed: 2, exact: true });
    expect(depth.byType.a!.ready).toBe(6);
    expect(depth.byType.b!.ready).toBe(3);
    expect(depth.nextDueAt).toBeGreaterThan(s.clock.now());

    // The gauge alone, read after the fixes, sees the same and queries as much as the whole sweep did.
    s.meter.reset();
    const after = await s.store.depth(['a', 'b']);
    expect(after).toEqual(depth);
    expect(sweepQueries).toBe(s.meter.count('Query'));
    // Recovery alone queries each of the 32 sweep partitions on top: what the shared read saves.
    s.meter.reset();
    await s.store.recover();
    expect(s.meter.count('Query')).toBe(32);
  });

  it('a budget smaller than the expired leases: each sweep fixes its share, goes on where it stopped, and counts what is left', async () => {
    // 3 a page, 2 pages: 6 fixes a sweep.
    const s = await createTestStore(server.endpoint, { recoveryBatchSize: 3, recoveryMaxBatches: 2 });
    for (let i = 0; i < 20; i++) await s.store.enqueue({ type: 'a', owner: 'o', maxAttempts: 3 });
    expect((await s.store.claim({ workerId: 'doomed', types: ['a'], max: 20 })).claimed).toHaveLength(20);
    expire(s);

    let requeued = 0;
    for (let sweep = 0; sweep < 4; sweep++) {
      const { report, depth } = await s.store.sweepAndMeasure(['a']);
      expect(report.requeued).toBe(Math.min(6, 20 - requeued));
      expect(report.truncated).toBe(requeued + report.requeued < 20);
      requeued += report.requeued;
      // The gauge counts the leases the sweep left, not the ones it fixed.
      expect(depth.leased).toBe(await running(s));
      expect(depth.leased).toBe(20 - requeued);
      expect(depth.byType.a!.ready).toBe(requeued);
    }
    expect(requeued).toBe(20);
    const items = await s.scanAll();
    expect(items.filter((i) => i.status === 'QUEUED' && i.attempts === 1)).toHaveLength(20);
  });
});
