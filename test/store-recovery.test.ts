import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const expire = (s: {
  clock: { advance(ms: number): void };
  config: { leaseTimeoutMs: number; clockSkewMs: number };
}) => s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1);

describe('recovery of expired leases', () => {
  it('two recoveries sweeping the same expired tasks at once fix each task exactly once', async () => {
    const s = await createTestStore(server.endpoint);
    const other = s.peer();
    for (let i = 0; i < 40; i++) await s.store.enqueue({ type: 'requeue-me', owner: 'o', maxAttempts: 3 });
    for (let i = 0; i < 20; i++) await s.store.enqueue({ type: 'fail-me', owner: 'o', maxAttempts: 1 });
    const held = await s.store.claim({ workerId: 'doomed', types: ['requeue-me', 'fail-me'], max: 60 });
    expect(held.claimed).toHaveLength(60);
    expire(s);

    const [a, b] = await Promise.all([s.store.recover(), other.recover()]);
    expect(a.requeued + b.requeued).toBe(40);
    expect(a.failed + b.failed).toBe(20);
    // Whatever one sweep fixed, the other found already fixed (its condition failed, or the item read back
    // showed it) and skipped, or no longer saw at all.
    expect(a.skipped + b.skipped).toBeLessThanOrEqual(60);

    const items = await s.scanAll();
    const requeued = items.filter((i) => i.type === 'requeue-me');
    expect(
      requeued.every(
        (i) => i.status === 'QUEUED' && i.attempts === 1 && i.leaseToken === 1 && i.leaseOwner === undefined,
      ),
    ).toBe(true);
    const failed = items.filter((i) => i.type === 'fail-me');
    expect(
      failed.every(
        (i) => i.status === 'FAILED' && i.attempts === 1 && String(i.error).includes('lease expired'),
      ),
    ).toBe(true);

    // A third sweep finds nothing left, and the requeued tasks are claimable again.
    expect(await s.store.recover()).toMatchObject({ requeued: 0, failed: 0, skipped: 0 });
    const again = await s.store.claim({ workerId: 'next', types: ['requeue-me'], max: 100 });
    expect(again.claimed).toHaveLength(40);
    expect(again.claimed.every((c) => c.task.attempts === 2 && c.lease.token === 2)).toBe(true);
  });

  it('leaves live leases alone, including ones renewed on schedule, and honours the skew margin', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'live', owner: 'o' });
    let lease = (await s.store.claim({ workerId: 'w', types: ['live'], max: 1 })).claimed[0]!.lease;
    // Renew on schedule for three lease timeouts: the sweep never even reads it as a candidate.
    for (let elapsed = 0; elapsed < 3 * s.config.leaseTimeoutMs; elapsed += s.config.heartbeatIntervalMs) {
      s.clock.advance(s.config.heartbeatIntervalMs);
      const [r] = await s.store.renew({ leases: [lease] });
      if (r!.outcome !== 'renewed') throw new Error(`renewal ${r!.outcome}`);
      lease = r!.lease;
      s.meter.reset();
      expect(await s.store.recover()).toMatchObject({ requeued: 0, skipped: 0 });
      expect(s.meter.count('BatchGetItem')).toBe(0);
    }
    // Expired, but within the skew margin: still left alone.
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs - 1);
    expect((await s.store.recover()).requeued).toBe(0);
    s.clock.advance(2);
    expect((await s.store.recover()).requeued).toBe(1);
  });

  it('finishes the cancellation of a task whose holder died after a cancel request', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'cancel-dead', owner: 'o' });
    await s.store.claim({ workerId: 'w', types: ['cancel-dead'], max: 1 });
    await s.store.requestCancel({ id: task.id });
    expire(s);
    expect((await s.store.recover()).cancelled).toBe(1);
    expect((await s.store.get({ id: task.id })).status).toBe('CANCELLED');
  });

  it('works in bounded batches and reports when it stopped early', async () => {
    const s = await createTestStore(server.endpoint, { recoveryBatchSize: 5, recoveryMaxBatches: 2 });
    for (let i = 0; i < 23; i++) await s.store.enqueue({ type: 'many', owner: 'o' });
    await s.store.claim({ workerId: 'w', types: ['many'], max: 23 });
    expire(s);
    const first = await s.store.recover();
    expect(first.requeued).toBe(10);
    expect(first.truncated).toBe(true);
    expect((await s.store.recover()).requeued).toBe(10);
    const last = await s.store.recover();
    expect(last).toMatchObject({ requeued: 3, truncated: false });
  });

  it('moves the sweep key only when a renewal outruns it (one renewal in several writes the index)', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'renewals', owner: 'o' });
    let lease = (await s.store.claim({ workerId: 'w', types: ['renewals'], max: 1 })).claimed[0]!.lease;
    let moves = 0;
    const renewals = 30;
    for (let i = 0; i < renewals; i++) {
      s.clock.advance(s.config.heartbeatIntervalMs);
      const [r] = await s.store.renew({ leases: [lease] });
      if (r!.outcome !== 'renewed') throw new Error('lost');
      if (r!.lease.sweepAt !== lease.sweepAt) moves++;
      lease = r!.lease;
    }
    // Defaults: lease 60 s, heartbeat 10 s, skew 5 s -> slack 45 s -> one move every 5 renewals.
    expect(moves).toBe(renewals / 5);
  });
});
