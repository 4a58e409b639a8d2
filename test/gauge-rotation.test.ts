/**
 * The minute's gauge on a type found empty (store/gauge-rotation.ts): its rule on fixed inputs, and on
 * dynalite what it reads (its lane and a quarter of its shards), what it still finds, and how soon.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GaugeRotation, rotatingShards } from '../shared/store/gauge-rotation.js';
import { TaskStore } from '../shared/store/task-store.js';
import { SHARD_COUNT } from '../shared/table-layout.js';
import { TUNING } from '../shared/tuning.js';
import { idsInShard } from './support/shard-ids.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';

describe('the rotation (fixed inputs)', () => {
  it('reads every shard once in each round of sweeps, in runs of the given size', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: SHARD_COUNT }),
        fc.integer({ min: 0, max: 1_000 }),
        (per, start) => {
          const turns = Math.ceil(SHARD_COUNT / per);
          const seen = Array.from({ length: turns }, (_, i) => rotatingShards(start + i, per)).flat();
          expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: SHARD_COUNT }, (_, s) => s));
          for (let i = 0; i < turns; i++)
            expect(rotatingShards(start + i, per).length).toBeLessThanOrEqual(per);
        },
      ),
    );
    expect(rotatingShards(0, 4)).toEqual([0, 1, 2, 3]);
    expect(rotatingShards(5, 4)).toEqual([4, 5, 6, 7]);
  });

  it('looks at a type in part only after a sweep found it empty, and in full again once it had work', () => {
    const rotation = new GaugeRotation(4);
    expect(rotation.firstShards('a')).toBeUndefined();
    rotation.noteSweep({ a: { ready: 0 }, b: { ready: 3 } });
    expect(rotation.firstShards('a')).toEqual([4, 5, 6, 7]);
    expect(rotation.firstShards('b')).toBeUndefined();
    rotation.noteSweep({ a: { ready: 2 }, b: { ready: 0 } });
    expect(rotation.firstShards('a')).toBeUndefined();
    expect(rotation.firstShards('b')).toEqual([8, 9, 10, 11]);
  });
});

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('an empty type looked at in part (dynalite)', () => {
  const sweepsToCover = Math.ceil(SHARD_COUNT / TUNING.gauge.idleTypeShardsPerSweep);

  it('reads the lane and a quarter of the shards while the type stays empty, and every shard within four sweeps', async () => {
    const s = await createTestStore(server.endpoint);
    const rotation = new GaugeRotation();
    await s.store.sweepAndMeasure(['a'], rotation);

    s.meter.reset();
    const idle = await s.store.sweepAndMeasure(['a'], rotation);
    expect(idle.depth.byType.a).toEqual({ ready: 0, basis: 'counted', oldestDueAt: undefined });
    // 32 sweep partitions, the lane and 4 shards (was 32 + 17).
    // The lease and delay shards, the type controls (which types have rotated tasks), the lane, and a quarter of the shards.
    expect(s.meter.count('Query')).toBe(32 + 1 + 1 + TUNING.gauge.idleTypeShardsPerSweep);

    // A task whose kick was lost, in the shard the next sweep does not read: found within a round of sweeps.
    const next = rotation.firstShards('a')!;
    const shard = (next.at(-1)! + 1) % SHARD_COUNT;
    const store = new TaskStore({ doc: s.doc, config: s.config, clock: s.clock, newId: idsInShard(shard) });
    await store.enqueue({ type: 'a', owner: 'o' });
    const found: number[] = [];
    for (let sweep = 0; sweep < sweepsToCover; sweep++)
      found.push((await s.store.sweepAndMeasure(['a'], rotation)).depth.byType.a!.ready);
    expect(found[0]).toBe(0);
    expect(found.indexOf(1)).toBeGreaterThan(0);
    expect(found.indexOf(1)).toBeLessThan(sweepsToCover);
  });

  it('a task in a shard it looks at: the whole type read in the same sweep, and counted as a full read counts it', async () => {
    const s = await createTestStore(server.endpoint);
    const rotation = new GaugeRotation();
    await s.store.sweepAndMeasure(['a'], rotation);
    const looked = rotation.firstShards('a')!;
    // One task in a looked-at shard, two in one it does not look at, one in the lane.
    const inLooked = new TaskStore({
      doc: s.doc,
      config: s.config,
      clock: s.clock,
      newId: idsInShard(looked[0]!),
    });
    const other = new TaskStore({
      doc: s.doc,
      config: s.config,
      clock: s.clock,
      newId: idsInShard((looked.at(-1)! + 1) % SHARD_COUNT, 'o'),
    });
    await inLooked.enqueue({ type: 'a', owner: 'o' });
    await other.enqueue({ type: 'a', owner: 'o' });
    await other.enqueue({ type: 'a', owner: 'o' });
    await s.store.enqueue({ type: 'a', owner: 'o', priority: 5 });
    s.meter.reset();
    const { depth } = await s.store.sweepAndMeasure(['a'], rotation);
    // The heads of the first look are not read twice: 32 + the lane + 16 shards.
    expect(s.meter.count('Query')).toBe(32 + 1 + 1 + SHARD_COUNT);
    expect(depth.byType.a!.ready).toBe(4);
    expect(depth.byType.a).toEqual((await s.store.depth(['a'])).byType.a);
    // It had work: the next sweep reads it in full.
    expect(rotation.firstShards('a')).toBeUndefined();
  });
});
