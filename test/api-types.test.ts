/**
 * GET /types, POST /types/{type}/pause and /resume through the API handler on the request-only store
 * (the API Lambda's), with a whole TaskStore beside it as the worker and recovery, on a manual clock:
 * counts per type (waiting from recovery's gauge, running and delayed read from the lease and delay
 * partitions), the controls as written and read back, a 404 that writes nothing for an unknown type,
 * and what the construct's grants are built from (pause and resume marked as the operator's routes).
 * Every exchange is checked against the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { readTypeControls } from '../shared/store/type-controls.js';
import { scaleCounts } from '../shared/stats/type-overview.js';
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

async function world() {
  const w = await createApiWorld(server.endpoint);
  const enqueue = (type: string, extra: Record<string, unknown> = {}, caller = ALICE) =>
    w.call({ method: 'POST', path: '/tasks', caller, body: { type, ...extra } });
  const typeOf = async (type: string) =>
    ((await w.call({ method: 'GET', path: '/types' })).body.types as { type: string }[]).find(
      (t) => t.type === type,
    );
  return { ...w, enqueue, typeOf };
}

describe('GET /types', () => {
  it('lists every type, none paused, with its waiting, running and delayed tasks (every owner’s)', async () => {
    const w = await world();
    const before = await w.call({ method: 'GET', path: '/types' });
    expect(before.status).toBe(200);
    expect(before.body.types.map((t: { type: string }) => t.type)).toEqual(w.app.registry.names());
    expect(before.body).not.toHaveProperty('waitingAt');

    await w.enqueue('demo.sleep', { payload: { ms: 10 } });
    await w.enqueue('demo.sleep', { payload: { ms: 10 } }, BOB);
    await w.enqueue('demo.sleep', { payload: { ms: 10 } });
    await w.enqueue('demo.echo', { delaySeconds: 600 });
    await w.enqueue('demo.echo', { delaySeconds: 600 }, BOB);
    await w.enqueue('demo.echo');
    await w.app.store.claim({ workerId: 'w1', types: ['demo.sleep'], max: 2 });
    await runRecoverySweep(
      w.app.store,
      { clock: w.clock, metrics: new RecordingMetrics(), logger: silentLogger() },
      w.app.registry.names(),
    );

    const { body } = await w.call({ method: 'GET', path: '/types', caller: BOB });
    expect(body.waitingAt).toBe(iso(w.clock.now()));
    expect(body.estimated).toBe(false);
    expect(body.types.find((t: { type: string }) => t.type === 'demo.sleep')).toEqual({
      type: 'demo.sleep',
      paused: false,
      waiting: 1,
      running: 2,
      delayed: 0,
    });
    expect(await w.typeOf('demo.echo')).toEqual({
      type: 'demo.echo',
      paused: false,
      waiting: 1,
      running: 0,
      delayed: 2,
    });
  });

  it('scales a partial sample to the gauged total, and counts a whole one as it is (pure)', () => {
    expect(scaleCounts(['a', 'a', 'b'], true, 300)).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    expect(scaleCounts(['a', 'a', 'a', 'b'], false, 400)).toEqual(
      new Map([
        ['a', 300],
        ['b', 100],
      ]),
    );
    // No gauge yet, or a gauge below what was seen (it is a minute old): what was seen.
    expect(scaleCounts(['a', 'b'], false, undefined)).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
      ]),
    );
    expect(scaleCounts(['a', 'b'], false, 1)).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
      ]),
    );
  });
});

describe('POST /types/{type}/pause and /resume', () => {
  it('pauses and resumes a type, records who and when, and repeats answer the same', async () => {
    const w = await world();
    const paused = await w.call({ method: 'POST', path: '/types/demo.sleep/pause', caller: BOB });
    expect(paused).toEqual({
      status: 200,
      body: {
        type: { type: 'demo.sleep', paused: true, changedAt: iso(w.clock.now()), changedBy: BOB },
        takesEffectWithinMs: w.config.pollIntervalMs,
      },
    });
    expect((await w.call({ method: 'POST', path: '/types/demo.sleep/pause' })).body.type.paused).toBe(true);
    expect(await w.typeOf('demo.sleep')).toMatchObject({ paused: true, changedBy: ALICE });
    expect(await w.typeOf('demo.echo')).toMatchObject({ paused: false });
    expect(await w.typeOf('demo.echo')).not.toHaveProperty('changedAt');

    w.clock.advance(5_000);
    const resumed = await w.call({ method: 'POST', path: '/types/demo.sleep/resume' });
    expect(resumed.body.type).toEqual({
      type: 'demo.sleep',
      paused: false,
      changedAt: iso(w.clock.now()),
      changedBy: ALICE,
    });
    expect(await w.typeOf('demo.sleep')).toMatchObject({ paused: false });
  });

  it('answers 404 naming the known types for a type this deployment does not define, and writes nothing', async () => {
    const w = await world();
    for (const path of ['/types/demo.nope/pause', '/types/demo.nope/resume', '/types/%2E%2E/pause']) {
      const res = await w.call({ method: 'POST', path });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('TYPE_NOT_FOUND');
      expect(res.body.detail).toContain('known types: demo.');
    }
    expect((await readTypeControls(w.app.store.ctx, { consistent: true })).size).toBe(0);
  });

  it('went through the documented operations', () => {
    expect(['listTypes', 'pauseType', 'resumeType'].filter((id) => !conformance.seen.has(id))).toEqual([]);
  });

  it('marks pause and resume as the operator’s routes, apart from every other (the grants are built from this)', () => {
    expect(API_ROUTES.filter((r) => r.operator).map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /types/{type}/pause',
      'POST /types/{type}/resume',
    ]);
  });
});
