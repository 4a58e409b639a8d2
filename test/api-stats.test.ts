/**
 * GET /stats through the API handler on the request-only store the API Lambda runs it on
 * (createRequestLeasehold; a whole TaskStore beside it plays the worker and recovery), on a
 * manual clock: the queue summary, the caller's running tasks, the caller's outcomes per minute (a
 * cancel through the API is counted and written before its answer), a bad `since`, and owner scoping.
 * Every exchange is checked against the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { ALICE, BOB } from './support/api-events.js';
import { conformance, createApiWorld } from './support/api-world.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { silentLogger } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const iso = (ms: number) => new Date(ms).toISOString();
const counts = (c: Record<string, number>) => ({ succeeded: 0, failed: 0, retried: 0, cancelled: 0, ...c });

async function world() {
  const w = await createApiWorld(server.endpoint);
  const stats = (caller: string, query?: Record<string, string>) =>
    w.call({ method: 'GET', path: '/stats', caller, ...(query ? { query } : {}) });
  return { ...w, stats };
}

describe('GET /stats', () => {
  it('answers an empty queue: no summary yet, nothing running, no minutes', async () => {
    const w = await world();
    const res = await w.stats(ALICE);
    expect(res).toEqual({
      status: 200,
      body: { owner: ALICE, at: iso(w.clock.now()), running: [], runningComplete: true, minutes: [] },
    });
  });

  it('counts a cancel through the API at once (written before the answer), for its caller only', async () => {
    const w = await world();
    const created = await w.call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.echo', delaySeconds: 3600 },
    });
    w.clock.advance(15_000);
    const cancelled = await w.call({ method: 'POST', path: `/tasks/${created.body.task.id}/cancel` });
    expect(cancelled.body.task.status).toBe('CANCELLED');
    // Nothing flushed it since: the cancel's request did.
    expect((await w.stats(ALICE)).body.minutes).toEqual([
      { at: iso(Date.UTC(2026, 10, 30, 9, 0, 0)), types: { 'demo.echo': counts({ cancelled: 1 }) } },
    ]);
    expect((await w.stats(BOB)).body.minutes).toEqual([]);
    // `since` after that minute: nothing; an hour later: out of the window.
    expect((await w.stats(ALICE, { since: '2026-11-30T09:01:00Z' })).body.minutes).toEqual([]);
    w.clock.advance(3_600_000);
    expect((await w.stats(ALICE)).body.minutes).toEqual([]);
  });

  it('shows the caller’s running tasks with progress and lease time, and the queue recovery gauged', async () => {
    const w = await world();
    for (const caller of [ALICE, BOB])
      await w.call({
        method: 'POST',
        path: '/tasks',
        caller,
        body: { type: 'demo.sleep', payload: { ms: 1_000 } },
      });
    await w.call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo', payload: { waiting: true } } });
    const { claimed } = await w.app.store.claim({ workerId: 'w1', types: ['demo.sleep'], max: 2 });
    const alices = claimed.find((c) => c.task.owner === ALICE)!;
    w.clock.advance(2_000);
    await w.app.store.renew({
      leases: [alices.lease],
      progress: { [alices.task.id]: { fraction: 0.5, note: 'half way' } },
    });
    await runRecoverySweep(
      w.app.store,
      { clock: w.clock, metrics: new RecordingMetrics(), logger: silentLogger() },
      w.app.registry.names(),
    );

    const { body } = await w.stats(ALICE);
    expect(body.running).toHaveLength(1);
    expect(body.running[0]).toMatchObject({
      id: alices.task.id,
      type: 'demo.sleep',
      status: 'RUNNING',
      attempts: 1,
      leaseOwner: 'w1',
      leaseUntil: iso(w.clock.now() + w.config.leaseTimeoutMs),
      progress: 0.5,
      progressNote: 'half way',
    });
    expect(body.running[0]).not.toHaveProperty('payload');
    expect(body.runningComplete).toBe(true);
    expect(body.queue).toEqual({
      at: iso(w.clock.now()),
      types: w.app.registry.names().map((type) => ({
        type,
        ready: type === 'demo.echo' ? 1 : 0,
        ...(type === 'demo.echo' ? { oldestDueAt: iso(w.clock.now() - 2_000) } : {}),
        estimated: false,
      })),
      leased: 2,
      delayed: 0,
    });
    const bob = (await w.stats(BOB)).body;
    expect(bob.running.map((t: { owner?: string; id: string }) => t.id)).toEqual(
      claimed.filter((c) => c.task.owner === BOB).map((c) => c.task.id),
    );
    // The queue is everyone's; the running list and the minutes are the caller's.
    expect(bob.queue).toEqual(body.queue);
  });

  it.each([
    [{ since: 'yesterday' }, 'since'],
    [{ since: '2026-11-30T09:00:00' }, 'since'],
    [{ since: '2026-11-30T09:00:00Z', limit: '5' }, 'query'],
  ])('refuses %j with a 400 that names the field, and writes nothing', async (query, field) => {
    const w = await world();
    const before = (await w.scanAll()).length;
    const res = await w.stats(ALICE, query);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    expect((await w.scanAll()).length).toBe(before);
  });

  it('takes any time before the window as the whole window, a year 0000 too', async () => {
    const w = await world();
    const res = await w.stats(ALICE, { since: '0000-01-01T00:00:00Z' });
    expect(res.status).toBe(200);
  });

  it('went through the documented operation', () => {
    expect(conformance.seen.has('getStats')).toBe(true);
  });
});
