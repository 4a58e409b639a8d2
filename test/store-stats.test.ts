/**
 * What GET /stats reads, on the emulators: the per-minute outcome counters (written by the worker,
 * recovery and a cancel, per owner and type, one write per owner and minute a flush), the owner's
 * running tasks (bounded: more leases than one read looks at cost no more requests), and the queue
 * summary's per-type figures (an older summary still parses).
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { RecordingMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { emptyCounts, MINUTE_MS, type OutcomeCounts } from '../shared/stats/outcome-counter.js';
import { LEASE_KEYS_PER_PARTITION, RUNNING_READ_LIMIT } from '../shared/stats/running-tasks.js';
import type { QueueStats } from '../shared/stats/stats-reader.js';
import { QUEUE_SUMMARY_KEY, readQueueSummary } from '../shared/store/queue-summary.js';
import type { TaskStore } from '../shared/store/task-store.js';
import { SHARD_COUNT } from '../shared/table-layout.js';
import { defineTask } from '../shared/tasks/define.js';
import { FaultInjector } from './support/fault-injection.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { createWorkerWorld, LOAD_TOLERANT_LEASES, silentLogger, sleep } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const ALICE = 'arn:aws:iam::123456789012:user/alice';
const BOB = 'arn:aws:iam::123456789012:user/bob';
const WINDOW = { windowMinutes: 60 };

/** An answer's minutes added up per type (a run may straddle a minute boundary). */
function perType(stats: QueueStats): Record<string, OutcomeCounts> {
  const sums: Record<string, OutcomeCounts> = {};
  for (const minute of stats.minutes)
    for (const [type, counts] of Object.entries(minute.types)) {
      const sum = (sums[type] ??= emptyCounts());
      for (const [outcome, n] of Object.entries(counts)) sum[outcome as keyof OutcomeCounts] += n;
    }
  return sums;
}
const counts = (c: Partial<OutcomeCounts>) => ({ ...emptyCounts(), ...c });

/** UpdateItems sent to the outcome counters' partitions, as the injector (faulting nothing) logged them. */
const statsWrites = (faults: FaultInjector) => faults.count('UpdateItem', 'STATS#');

/** Cancels a queued task: it ends at once, counted by the store that cancelled it. */
async function cancelQueued(store: TaskStore, owner: string, type: string) {
  const { task } = await store.enqueue({ type, owner, delayMs: 3_600_000 });
  await store.requestCancel({ id: task.id, owner });
}

describe('outcome counters', () => {
  it('count a worker’s successes, a retried then failed task, a cancel and recovery’s requeue per owner and type, in one write per owner and minute', async () => {
    const definitions = [
      defineTask({ name: 'stats.ok', schema: z.unknown(), handler: () => 'done' }),
      defineTask({
        name: 'stats.flaky',
        schema: z.unknown(),
        handler: () => {
          throw new Error('always');
        },
      }),
    ];
    // A flush that timed out under load would be sent again.
    const w = await createWorkerWorld(server.endpoint, definitions, LOAD_TOLERANT_LEASES);
    const faults = new FaultInjector(w.client);
    for (let i = 0; i < 10; i++) await w.store.enqueue({ type: 'stats.ok', owner: ALICE });
    await w.store.enqueue({ type: 'stats.flaky', owner: ALICE, maxAttempts: 2 });
    for (let i = 0; i < 2; i++) await w.store.enqueue({ type: 'stats.ok', owner: BOB });
    await cancelQueued(w.store, ALICE, 'stats.ok');
    // A holder that dies: no worker serves this type, so only recovery moves it.
    await w.store.enqueue({ type: 'stats.orphan', owner: ALICE });
    const [orphan] = (await w.peer().claim({ workerId: 'dead', types: ['stats.orphan'], max: 1 })).claimed;

    const summary = await w.worker('w1', { store: w.store }).run({ idleStopMs: 300 });
    expect(summary.claimed).toBe(14); // 12 successes, and the flaky task twice
    await sleep(Math.max(0, orphan!.lease.leaseUntil + w.config.clockSkewMs + 50 - Date.now()));
    const report = await runRecoverySweep(w.store, {
      clock: w.storeClock,
      metrics: new RecordingMetrics(),
      logger: silentLogger(),
    });
    expect(report.requeued).toBe(1);

    const alice = await w.store.stats({ owner: ALICE, ...WINDOW });
    expect(perType(alice)).toEqual({
      'stats.ok': counts({ succeeded: 10, cancelled: 1 }),
      'stats.flaky': counts({ retried: 1, failed: 1 }),
      'stats.orphan': counts({ retried: 1 }),
    });
    expect(perType(await w.store.stats({ owner: BOB, ...WINDOW }))).toEqual({
      'stats.ok': counts({ succeeded: 2 }),
    });
    // 16 outcomes, written by two flushes: the run's last (two owners, a minute each or two if the run
    // crossed one) and the sweep's (one owner, one minute). Per flush, not per task.
    expect(statsWrites(faults)).toBeGreaterThanOrEqual(3);
    expect(statsWrites(faults)).toBeLessThanOrEqual(5);
  });

  it('a flush that fails keeps its counts, and the next writes them once', async () => {
    const s = await createTestStore(server.endpoint);
    const faults = new FaultInjector(s.client);
    for (let i = 0; i < 3; i++) await cancelQueued(s.store, ALICE, 'mail.send');
    const failing = faults.inject({
      operation: 'UpdateItem',
      pk: 'STATS#',
      fault: 'deadline-before',
      times: 2,
    });
    const failed = await s.store.flushOutcomes();
    expect(failed).toMatchObject({ written: 0, kept: 3, dropped: 0 });
    expect(failed.errors[0]).toMatch(/Abort/);
    expect((await s.store.stats({ owner: ALICE, ...WINDOW })).minutes).toEqual([]);
    // One more while the counts wait; the next flush fails too, and keeps both.
    await cancelQueued(s.store, ALICE, 'mail.send');
    expect(await s.store.flushOutcomes()).toMatchObject({ written: 0, kept: 4 });
    failing.disarm();
    expect(await s.store.flushOutcomes()).toMatchObject({ written: 1, kept: 0 });
    // Nothing left: a flush with nothing to write sends nothing.
    const before = faults.log.length;
    expect(await s.store.flushOutcomes()).toMatchObject({ written: 0, kept: 0 });
    expect(faults.log.length).toBe(before);
    expect((await s.store.stats({ owner: ALICE, ...WINDOW })).minutes).toEqual([
      { at: s.clock.now(), types: { 'mail.send': counts({ cancelled: 4 }) } },
    ]);
  });

  it('keeps type names apart that differ only in punctuation (one write for the minute)', async () => {
    const s = await createTestStore(server.endpoint);
    const faults = new FaultInjector(s.client);
    const types = ['a.b', 'a-b', 'a_b', 'a:b', 'constructor'];
    for (const [i, type] of types.entries())
      for (let n = 0; n <= i; n++) await cancelQueued(s.store, ALICE, type);
    expect(await s.store.flushOutcomes()).toMatchObject({ written: 1 });
    expect(statsWrites(faults)).toBe(1);
    const [minute] = (await s.store.stats({ owner: ALICE, ...WINDOW })).minutes;
    expect(minute!.types).toEqual(Object.fromEntries(types.map((t, i) => [t, counts({ cancelled: i + 1 })])));
  });

  it('reads the minutes from `since` (its minute included), at most the window back, oldest first; empty minutes left out', async () => {
    const s = await createTestStore(server.endpoint);
    const t0 = s.clock.now();
    await cancelQueued(s.store, ALICE, 'mail.send'); // minute 0
    s.clock.advance(2 * MINUTE_MS + 30_000);
    await cancelQueued(s.store, ALICE, 'mail.send'); // minute 2
    await cancelQueued(s.store, BOB, 'mail.send');
    s.clock.advance(MINUTE_MS);
    await cancelQueued(s.store, ALICE, 'report.build'); // minute 3, now
    await s.store.flushOutcomes();
    const at = (minute: number) => t0 + minute * MINUTE_MS;
    const minutesOf = async (input: { since?: number; windowMinutes: number }) =>
      (await s.store.stats({ owner: ALICE, ...input })).minutes.map((m) => [m.at, m.types]);

    expect(await minutesOf(WINDOW)).toEqual([
      [at(0), { 'mail.send': counts({ cancelled: 1 }) }],
      [at(2), { 'mail.send': counts({ cancelled: 1 }) }],
      [at(3), { 'report.build': counts({ cancelled: 1 }) }],
    ]);
    expect(await minutesOf({ since: at(2) + 45_000, ...WINDOW })).toEqual([
      [at(2), { 'mail.send': counts({ cancelled: 1 }) }],
      [at(3), { 'report.build': counts({ cancelled: 1 }) }],
    ]);
    // The window counts the current minute: two minutes are minutes 2 and 3, whatever `since` says.
    expect((await minutesOf({ since: t0, windowMinutes: 2 })).map(([m]) => m)).toEqual([at(2), at(3)]);
    expect(await minutesOf({ since: s.clock.now() + 5 * MINUTE_MS, ...WINDOW })).toEqual([]);
    // An hour later, all of it is out of the window.
    s.clock.advance(60 * MINUTE_MS);
    expect(await minutesOf(WINDOW)).toEqual([]);
  });
});

describe('running tasks', () => {
  it('shows the caller’s own running tasks, lease expiring soonest first, with progress, note, attempts and lease time, without payload', async () => {
    const s = await createTestStore(server.endpoint);
    for (const owner of [ALICE, ALICE, ALICE, BOB, BOB])
      await s.store.enqueue({ type: 'run.it', owner, payload: { secret: owner } });
    const { claimed } = await s.store.claim({ workerId: 'w1', types: ['run.it'], max: 5 });
    expect(claimed).toHaveLength(5);
    await s.store.enqueue({ type: 'run.it', owner: ALICE }); // queued, not running
    const alices = claimed.filter((c) => c.task.owner === ALICE);
    // Two of Alice's are renewed, one later and with progress: their leases now expire in that order.
    s.clock.advance(500);
    expect((await s.store.renew({ leases: [alices[2]!.lease] }))[0]?.outcome).toBe('renewed');
    s.clock.advance(500);
    const first = alices[0]!;
    const [renewed] = await s.store.renew({
      leases: [first.lease],
      progress: { [first.task.id]: { fraction: 0.4, note: 'step 2 of 5' } },
    });
    expect(renewed?.outcome).toBe('renewed');
    await s.store.requestCancel({ id: alices[1]!.task.id, owner: ALICE });

    const stats = await s.store.stats({ owner: ALICE, ...WINDOW });
    expect(stats.runningComplete).toBe(true);
    expect(stats.running.map((t) => t.id)).toEqual([alices[1]!.task.id, alices[2]!.task.id, first.task.id]);
    expect(stats.running.map((t) => t.status)).toEqual(['CANCEL_REQUESTED', 'RUNNING', 'RUNNING']);
    const last = stats.running[2]!;
    expect(last).toMatchObject({
      owner: ALICE,
      attempts: 1,
      leaseOwner: 'w1',
      progress: 0.4,
      progressNote: 'step 2 of 5',
      leaseUntil: s.clock.now() + s.config.leaseTimeoutMs,
    });
    expect(stats.running.every((t) => t.payload === undefined && t.result === undefined)).toBe(true);
    expect((await s.store.stats({ owner: BOB, ...WINDOW })).running.map((t) => t.owner)).toEqual([BOB, BOB]);
    // A task that ended is gone from the list.
    await s.store.complete({ lease: alices[2]!.lease, result: 1 });
    expect((await s.store.stats({ owner: ALICE, ...WINDOW })).running).toHaveLength(2);
  });

  it(`reads at most ${RUNNING_READ_LIMIT} leases: more cost no more requests, and the answer says it may be incomplete`, async () => {
    const s = await createTestStore(server.endpoint);
    const requestsOf = async (owner: string) => {
      s.meter.reset();
      const stats = await s.store.stats({ owner, ...WINDOW });
      return { stats, sent: Object.fromEntries(s.meter.sent), units: sum(s.meter.capacity) };
    };
    const claimAll = async (type: string, n: number) => {
      let claimed = 0;
      while (claimed < n)
        claimed += (await s.store.claim({ workerId: 'w1', types: [type], max: n - claimed })).claimed.length;
    };
    for (let i = 0; i < 4; i++) await s.store.enqueue({ type: 'few', owner: ALICE });
    await claimAll('few', 4);
    const small = await requestsOf(ALICE);
    expect(small.stats.runningComplete).toBe(true);
    expect(small.stats.running).toHaveLength(4);

    // Enough leases that some lease partition holds more than is read.
    const many = SHARD_COUNT * (LEASE_KEYS_PER_PARTITION + 2);
    for (let i = 0; i < many; i++) await s.store.enqueue({ type: 'many', owner: BOB });
    await claimAll('many', many);
    const large = await requestsOf(ALICE);
    expect(large.stats.runningComplete).toBe(false);
    expect(large.stats.running.every((t) => t.owner === ALICE)).toBe(true);
    // One GetItem (the summary), 16 lease Queries and the counters' Query, one BatchGetItem: either way.
    expect(large.sent).toEqual({ GetItem: 1, Query: SHARD_COUNT + 1, BatchGetItem: 1 });
    expect(small.sent).toEqual(large.sent);
    // Read units are bounded too: at most RUNNING_READ_LIMIT task items (each under 1 KB).
    expect(large.units).toBeLessThanOrEqual(RUNNING_READ_LIMIT * 0.5 + (SHARD_COUNT + 2) * 0.5 + 1);
    const bob = await s.store.stats({ owner: BOB, ...WINDOW });
    expect(bob.running.length).toBeLessThanOrEqual(RUNNING_READ_LIMIT);
    expect(bob.running.length).toBeGreaterThan(RUNNING_READ_LIMIT - 4 - SHARD_COUNT);
  });
});

describe('the queue summary', () => {
  it('holds each type’s ready count, oldest due time and basis, and the delayed total; GET /stats shows them', async () => {
    const s = await createTestStore(server.endpoint);
    const t0 = s.clock.now();
    await s.store.enqueue({ type: 'q.one', owner: ALICE });
    s.clock.advance(1_000);
    await s.store.enqueue({ type: 'q.one', owner: BOB });
    await s.store.enqueue({ type: 'q.one', owner: BOB, delayMs: 60_000 });
    await s.store.enqueue({ type: 'q.two', owner: BOB, delayMs: 30_000 });
    await runRecoverySweep(
      s.store,
      { clock: s.clock, metrics: new RecordingMetrics(), logger: silentLogger() },
      ['q.one', 'q.two'],
    );
    const summary = await readQueueSummary(s.store.ctx);
    expect(summary).toMatchObject({
      writtenAt: s.clock.now(),
      readyTypes: ['q.one'],
      leased: 0,
      delayed: 2,
      nextDueAt: s.clock.now() + 30_000,
      types: [
        { type: 'q.one', ready: 2, oldestDueAt: t0, estimated: false },
        { type: 'q.two', ready: 0, estimated: false },
      ],
    });
    expect(summary!.types![1]).not.toHaveProperty('oldestDueAt');
    expect((await s.store.stats({ owner: ALICE, ...WINDOW })).queue).toEqual({
      at: s.clock.now(),
      types: summary!.types,
      leased: 0,
      delayed: 2,
      nextDueAt: s.clock.now() + 30_000,
    });
  });

  it('written before the per-type figures, still parses (the worker’s tick reads it); GET /stats shows no queue until the next sweep', async () => {
    const s = await createTestStore(server.endpoint);
    const old = { writtenAt: s.clock.now(), readyTypes: ['x'], leased: 2, nextDueAt: s.clock.now() + 5_000 };
    await s.doc.send(
      new PutCommand({ TableName: s.config.tableName, Item: { ...QUEUE_SUMMARY_KEY, ...old } }),
    );
    expect(await readQueueSummary(s.store.ctx)).toEqual(old);
    const stats = await s.store.stats({ owner: ALICE, ...WINDOW });
    expect(stats).not.toHaveProperty('queue');
    expect(stats).toMatchObject({ owner: ALICE, running: [], runningComplete: true, minutes: [] });
  });
});

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
