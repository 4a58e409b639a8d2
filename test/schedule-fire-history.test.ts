import { describe, expect, it } from 'vitest';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { ScheduleService } from '../shared/schedules/schedule-service.js';
import { ScheduleStore } from '../shared/schedules/schedule-store.js';
import { localSync, type SchedulerSync } from '../shared/schedules/scheduler-sync.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { demoTasks } from '../tasks/demo.js';
import { ALICE, BOB, apiEvent, type EventSpec } from './support/api-events.js';
import { createTestStore } from './support/test-store.js';
import { FAST_LEASES, silentLogger } from './support/worker-world.js';
import { eventBridgeSyncFor } from './support/fake-scheduler.js';
import { useScheduleBackends } from './support/schedule-backends.js';
import { fireTick } from './support/fire-tick.js';

const backends = useScheduleBackends();

/** Schedules on a manual clock (2026-11-30T09:00:00Z), in AWS shape unless told otherwise. */
async function scheduleWorld(sync: SchedulerSync = eventBridgeSyncFor(backends.scheduler)) {
  const t = await createTestStore(backends.server.endpoint, FAST_LEASES);
  const registry = new TaskRegistry(demoTasks, t.config);
  const submitter = new TaskSubmitter(t.store, registry, t.config);
  const schedules = new ScheduleService(new ScheduleStore(t.store.ctx), sync, submitter, t.clock);
  const call = async (spec: EventSpec) => {
    const res = await handleApiEvent(apiEvent(spec), {
      store: t.store,
      submitter,
      schedules,
      config: t.config,
      logger: silentLogger(),
    });
    return {
      status: res.statusCode,
      body: (res.body ? JSON.parse(res.body) : undefined) as Record<string, any>,
    };
  };
  return { ...t, submitter, schedules, call };
}

const at = (iso: string) => Date.parse(iso);
const isos = (ms: number[]) => ms.map((m) => new Date(m).toISOString());
const task = { type: 'demo.echo', payload: { n: 1 } };

describe('missed ticks and the next tick of a rate schedule', () => {
  it('fires a few seconds off the PUT (Scheduler’s own rhythm, whole seconds) count as their ticks; only real gaps are missed', async () => {
    const w = await scheduleWorld();
    // PUT at 09:00:00.437; Scheduler starts its rhythm a moment later, at 09:00:03 (its scheduled times are whole seconds).
    w.clock.set(at('2026-11-30T09:00:00.437Z'));
    expect(
      (
        await w.call({
          method: 'PUT',
          path: '/schedules/every-minute',
          body: { expression: 'rate(1 minute)', task },
        })
      ).status,
    ).toBe(201);
    const scheduled = (k: number) => at('2026-11-30T09:00:03Z') + k * 60_000;
    for (const k of [1, 2, 4, 5]) await fireTick(w.schedules, ALICE, 'every-minute', scheduled(k));

    w.clock.set(at('2026-11-30T09:10:00.437Z'));
    const res = await w.call({ method: 'GET', path: '/schedules/every-minute/fires' });
    expect(res.body.fires.map((f: { scheduledTime: string }) => f.scheduledTime)).toEqual(
      isos([5, 4, 2, 1].map(scheduled)),
    );
    // Settled ticks (two minutes' grace): 1..7 on Scheduler's rhythm; 3, 6 and 7 have no fire.
    expect(res.body.missed).toEqual(isos([3, 6, 7].map(scheduled)));
    // The next tick sits on the fires seen, not on the PUT's millisecond.
    expect((await w.call({ method: 'GET', path: '/schedules/every-minute' })).body.schedule.nextFireAt).toBe(
      new Date(scheduled(10)).toISOString(),
    );
  });

  it('a replaced schedule starts a new rhythm, as Scheduler restarts it on update; ticks before the replacement are not expected', async () => {
    const w = await scheduleWorld();
    w.clock.set(at('2026-11-30T09:00:00.437Z'));
    await w.call({
      method: 'PUT',
      path: '/schedules/replaced',
      body: { expression: 'rate(1 minute)', task },
    });
    for (const k of [1, 2])
      await fireTick(w.schedules, ALICE, 'replaced', at('2026-11-30T09:00:03Z') + k * 60_000);

    w.clock.set(at('2026-11-30T09:10:00.437Z'));
    expect(
      (
        await w.call({
          method: 'PUT',
          path: '/schedules/replaced',
          body: { expression: 'rate(2 minutes)', task },
        })
      ).status,
    ).toBe(200);
    const scheduled = (k: number) => at('2026-11-30T09:10:02Z') + k * 120_000;
    // Before any fire of the new rhythm, the next tick is estimated from the PUT.
    expect((await w.call({ method: 'GET', path: '/schedules/replaced' })).body.schedule.nextFireAt).toBe(
      '2026-11-30T09:12:00.437Z',
    );
    for (const k of [1, 2]) await fireTick(w.schedules, ALICE, 'replaced', scheduled(k));

    w.clock.set(at('2026-11-30T09:19:00.437Z'));
    const res = await w.call({ method: 'GET', path: '/schedules/replaced/fires' });
    expect(res.body.fires).toHaveLength(4);
    expect(res.body.missed).toEqual(isos([scheduled(3)]));
    expect((await w.call({ method: 'GET', path: '/schedules/replaced' })).body.schedule.nextFireAt).toBe(
      new Date(scheduled(5)).toISOString(),
    );
  });

  it('the local ticker restarts a replaced rate schedule’s rhythm too', async () => {
    const w = await scheduleWorld(localSync);
    await w.call({
      method: 'PUT',
      path: '/schedules/local-rate',
      body: { expression: 'rate(5 minutes)', task },
    });
    w.clock.advance(7 * 60_000);
    await w.call({
      method: 'PUT',
      path: '/schedules/local-rate',
      body: { expression: 'rate(5 minutes)', task },
    });
    const replacedAt = w.clock.now();
    const { generation } = await w.schedules.get('local-rate', ALICE);
    const tick = { owner: ALICE, name: 'local-rate', generation };
    expect(await w.schedules.dueTicks(replacedAt, replacedAt + 10 * 60_000)).toEqual([
      { ...tick, scheduledTime: replacedAt + 5 * 60_000 },
      { ...tick, scheduledTime: replacedAt + 10 * 60_000 },
    ]);
  });

  it('cron ticks match exactly: a fire on the minute is that tick, a missing minute is missed', async () => {
    const w = await scheduleWorld();
    w.clock.set(at('2026-11-30T09:00:20Z'));
    await w.call({
      method: 'PUT',
      path: '/schedules/every-five',
      body: { expression: 'cron(0/5 * * * ? *)', task },
    });
    for (const m of ['05', '10', '20'])
      await fireTick(w.schedules, ALICE, 'every-five', at(`2026-11-30T09:${m}:00Z`));
    w.clock.set(at('2026-11-30T09:28:00Z'));
    const res = await w.call({ method: 'GET', path: '/schedules/every-five/fires' });
    expect(res.body.missed).toEqual(['2026-11-30T09:15:00.000Z', '2026-11-30T09:25:00.000Z']);
  });

  it('a schedule older than a thousand ticks shows its most recent missed ticks, not its first ones', async () => {
    const w = await scheduleWorld(localSync);
    const created = w.clock.now();
    await w.schedules.put('old-one', ALICE, { expression: 'rate(1 minute)', task });
    w.clock.advance(2000 * 60_000);
    for (const m of [1995, 1996, 1997]) await fireTick(w.schedules, ALICE, 'old-one', created + m * 60_000);
    const { missed } = await w.schedules.fires('old-one', ALICE, 20);
    const minutes = missed.map((t) => (t - created) / 60_000);
    expect(minutes).toHaveLength(100);
    expect(minutes.slice(-3)).toEqual([1993, 1994, 1998]);
    expect(minutes[0]).toBe(1896);
  });
});

describe('a reused schedule name starts with no history', () => {
  it('after alice deletes "nightly", bob’s "nightly" shows none of alice’s fires or task ids, and records its own ticks', async () => {
    const w = await scheduleWorld();
    await w.call({
      method: 'PUT',
      path: '/schedules/nightly',
      body: { expression: 'rate(1 minute)', task: { type: 'demo.echo', payload: { secret: 'alice' } } },
    });
    const tick = w.clock.now() + 60_000;
    const alices = await fireTick(w.schedules, ALICE, 'nightly', tick);
    expect((await w.call({ method: 'GET', path: '/schedules/nightly/fires' })).body.fires).toHaveLength(1);
    expect((await w.call({ method: 'DELETE', path: '/schedules/nightly' })).status).toBe(204);

    expect(
      (
        await w.call({
          method: 'PUT',
          path: '/schedules/nightly',
          caller: BOB,
          body: { expression: 'rate(1 minute)', task },
        })
      ).status,
    ).toBe(201);
    const bobsView = (await w.call({ method: 'GET', path: '/schedules/nightly/fires', caller: BOB })).body;
    expect(bobsView).toEqual({ fires: [], missed: [] });
    expect(JSON.stringify(bobsView)).not.toContain((alices as { taskId: string }).taskId);

    // The same tick time is bob's to record: alice's record does not block it.
    const bobs = await fireTick(w.schedules, BOB, 'nightly', tick);
    const fires = (await w.call({ method: 'GET', path: '/schedules/nightly/fires', caller: BOB })).body.fires;
    expect(fires).toEqual([
      {
        scheduledTime: new Date(tick).toISOString(),
        firedAt: expect.any(String),
        taskId: (bobs as { taskId: string }).taskId,
      },
    ]);
    // Alice's records are left to expire with the table's TTL.
    const left = (await w.scanAll()).filter((i) => String(i.pk).startsWith('FIRES#nightly#'));
    expect(left).toHaveLength(2);
    expect(new Set(left.map((i) => i.pk)).size).toBe(2);
    for (const item of left) expect(item.expiresAt).toEqual(expect.any(Number));
  });

  it('a fire that failed and was then retried with success shows the task, not the old error', async () => {
    const w = await scheduleWorld(localSync);
    // The first delivery's enqueue fails (throttled); Scheduler's retry of the same tick succeeds.
    const enqueue = w.submitter.enqueue.bind(w.submitter);
    let failures = 1;
    w.submitter.enqueue = async (input) => {
      if (failures-- > 0) throw Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
      return enqueue(input);
    };
    await w.schedules.put('retried', ALICE, { expression: 'rate(1 minute)', task });
    const tick = w.clock.now() + 60_000;
    await expect(fireTick(w.schedules, ALICE, 'retried', tick)).rejects.toThrow('slow down');
    expect((await w.schedules.fires('retried', ALICE)).fires).toEqual([
      { scheduledTime: tick, firedAt: w.clock.now(), error: 'ThrottlingException: slow down' },
    ]);
    const outcome = await fireTick(w.schedules, ALICE, 'retried', tick);
    expect((await w.schedules.fires('retried', ALICE)).fires).toEqual([
      { scheduledTime: tick, firedAt: w.clock.now(), taskId: (outcome as { taskId: string }).taskId },
    ]);
  });
});
