import { describe, expect, it } from 'vitest';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { ScheduleService } from '../shared/schedules/schedule-service.js';
import { definitionKey, ScheduleStore } from '../shared/schedules/schedule-store.js';
import { refOf } from '../shared/schedules/schedule-model.js';
import { demoTasks } from '../tasks/demo.js';
import { ALICE, apiEvent, type EventSpec } from './support/api-events.js';
import { createWorkerWorld, silentLogger, type WorkerWorld } from './support/worker-world.js';
import { eventBridgeSyncFor } from './support/fake-scheduler.js';
import { useScheduleBackends } from './support/schedule-backends.js';
import { fireTick } from './support/fire-tick.js';
import { eventBridgeName } from '../shared/schedules/scheduler-sync.js';

const backends = useScheduleBackends();

const world = () =>
  createWorkerWorld(backends.server.endpoint, demoTasks, {}, eventBridgeSyncFor(backends.scheduler));
const caller = (w: WorkerWorld) => async (spec: EventSpec) => {
  const res = await handleApiEvent(apiEvent(spec), { ...w, logger: silentLogger() });
  return {
    status: res.statusCode,
    headers: res.headers,
    body: res.body ? (JSON.parse(res.body) as Record<string, any>) : undefined,
  };
};
const definition = {
  expression: 'rate(5 minutes)',
  task: { type: 'demo.echo', payload: { report: 'daily' } },
};
const remote = (name: string) =>
  backends.scheduler.schedules.get(`leasehold/${eventBridgeName({ owner: ALICE, name })}`);
const definitionItem = async (w: WorkerWorld, name: string) =>
  (await w.scanAll()).find(
    (i) => i.pk === definitionKey(ALICE, name).pk && i.sk === definitionKey(ALICE, name).sk,
  );

describe('a definition EventBridge Scheduler refuses', () => {
  it('a new schedule Scheduler refuses is a 400 with its reason, not a 503 retry, and leaves no definition', async () => {
    const w = await world();
    const call = caller(w);
    backends.scheduler.rejectNext(1, 'Invalid Schedule Expression cron(0 9 ? * MON-FRI *).');
    const res = await call({ method: 'PUT', path: '/schedules/refused-new', body: definition });
    expect(res.status).toBe(400);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body).toMatchObject({
      code: 'SCHEDULE_REJECTED',
      reason: 'ValidationException: Invalid Schedule Expression cron(0 9 ? * MON-FRI *).',
    });
    expect(res.body!.detail).toContain('Invalid Schedule Expression');
    expect(res.body!.detail).toContain('no schedule was created');
    expect(await definitionItem(w, 'refused-new')).toBeUndefined();
    expect((await call({ method: 'GET', path: '/schedules/refused-new' })).status).toBe(404);
    expect(remote('refused-new')).toBeUndefined();
  });

  it('a replacement Scheduler refuses leaves the previous definition in force, in the table and in Scheduler', async () => {
    const w = await world();
    const call = caller(w);
    expect((await call({ method: 'PUT', path: '/schedules/refused-update', body: definition })).status).toBe(
      201,
    );
    backends.scheduler.rejectNext(1, 'Invalid time zone');
    const res = await call({
      method: 'PUT',
      path: '/schedules/refused-update',
      body: { ...definition, expression: 'cron(0 9 ? * MON-FRI *)' },
    });
    expect([res.status, res.body!.code]).toEqual([400, 'SCHEDULE_REJECTED']);
    expect(res.body!.detail).toContain('the previous definition stays in force');
    const kept = (await call({ method: 'GET', path: '/schedules/refused-update' })).body!.schedule;
    expect(kept).toMatchObject({ expression: 'rate(5 minutes)', sync: { state: 'SYNCED' } });
    expect(remote('refused-update')).toMatchObject({ ScheduleExpression: 'rate(5 minutes)' });
    // Versions only grow: the restored definition is a newer version than the refused one.
    expect((await definitionItem(w, 'refused-update'))!.version).toBe(3);
  });

  it('a failure worth retrying is still a 503 that says to send it again', async () => {
    const w = await world();
    backends.scheduler.failNext(1);
    const res = await caller(w)({ method: 'PUT', path: '/schedules/flaky-again', body: definition });
    expect([res.status, res.body!.code, res.headers['retry-after']]).toEqual([
      503,
      'SCHEDULE_NOT_SYNCED',
      '5',
    ]);
  });
});

describe('time zones and one-time schedules as Scheduler takes them', () => {
  it('stores and sends the canonical time zone name: europe/berlin, utc and US/Pacific are Europe/Berlin, UTC and America/Los_Angeles', async () => {
    const w = await world();
    const call = caller(w);
    for (const [name, given, canonical] of [
      ['tz-lower', 'europe/berlin', 'Europe/Berlin'],
      ['tz-utc', 'utc', 'UTC'],
      ['tz-alias', 'US/Pacific', 'America/Los_Angeles'],
      ['tz-kolkata', 'Asia/Kolkata', 'Asia/Kolkata'],
    ] as const) {
      const res = await call({
        method: 'PUT',
        path: `/schedules/${name}`,
        body: { ...definition, timezone: given },
      });
      expect([res.status, res.body!.schedule.timezone, res.body!.schedule.sync.state]).toEqual([
        201,
        canonical,
        'SYNCED',
      ]);
      expect(remote(name)).toMatchObject({ ScheduleExpressionTimezone: canonical });
    }
  });

  it('refuses EST with a 400 that names the zone to use, writing nothing', async () => {
    const w = await world();
    const res = await caller(w)({
      method: 'PUT',
      path: '/schedules/tz-est',
      body: { ...definition, timezone: 'EST' },
    });
    expect(res.status).toBe(400);
    expect(res.body!.errors).toEqual([
      { field: 'timezone', message: expect.stringContaining('America/New_York') },
    ]);
    expect(await w.scanAll()).toEqual([]);
  });

  it('refuses an at() time in the past with a 400 that says so, writing nothing', async () => {
    const w = await world();
    const res = await caller(w)({
      method: 'PUT',
      path: '/schedules/too-late',
      body: { ...definition, expression: 'at(2020-01-01T09:00:00)', timezone: 'Europe/Berlin' },
    });
    expect(res.status).toBe(400);
    expect(res.body!.errors).toEqual([
      {
        field: 'expression',
        message:
          'at(2020-01-01T09:00:00) is in the past (2020-01-01T08:00:00.000Z in Europe/Berlin); a one-time schedule needs a time ahead',
      },
    ]);
    expect(await w.scanAll()).toEqual([]);
    expect(remote('too-late')).toBeUndefined();
  });

  it('creates one-time schedules with ActionAfterCompletion DELETE (recurring ones NONE); its fire completes the definition, which then expires', async () => {
    const w = await world();
    const call = caller(w);
    const at = new Date(Date.now() + 3_600_000);
    at.setUTCMilliseconds(0);
    const expression = `at(${at.toISOString().slice(0, 19)})`;
    expect(
      (await call({ method: 'PUT', path: '/schedules/once', body: { ...definition, expression } })).status,
    ).toBe(201);
    expect((await call({ method: 'PUT', path: '/schedules/often', body: definition })).status).toBe(201);
    expect(remote('once')).toMatchObject({ ScheduleExpression: expression, ActionAfterCompletion: 'DELETE' });
    expect(remote('often')).toMatchObject({ ActionAfterCompletion: 'NONE' });
    expect((await call({ method: 'GET', path: '/schedules/once' })).body!.schedule.nextFireAt).toBe(
      at.toISOString(),
    );

    const fired = await fireTick(w.schedules, ALICE, 'once', at.getTime());
    expect(fired).toMatchObject({ fired: true, created: true });
    const done = (await call({ method: 'GET', path: '/schedules/once' })).body!.schedule;
    expect(done).toMatchObject({ enabled: false, completedAt: expect.any(String) });
    expect(done.nextFireAt).toBeUndefined();
    // Kept to show its fire for the retention period (the table's TTL), like a finished task.
    const retentionSeconds = w.config.retentionDays * 86_400;
    const item = (await definitionItem(w, 'once'))!;
    expect(item.expiresAt).toBeGreaterThan(Date.now() / 1000 + retentionSeconds - 60);
    expect(item.expiresAt).toBeLessThan(Date.now() / 1000 + retentionSeconds + 60);
    expect((await call({ method: 'GET', path: '/schedules/once/fires' })).body!.fires).toHaveLength(1);
    // A second delivery of the tick finds it done.
    expect(await fireTick(w.schedules, ALICE, 'once', at.getTime())).toEqual({
      fired: false,
      reason: 'disabled',
    });
    // Deleting it is still possible (Scheduler already deleted its copy).
    expect((await call({ method: 'DELETE', path: '/schedules/once' })).status).toBe(204);
  });

  it('fire records carry the table’s TTL (expiresAt, epoch seconds, retention after the fire)', async () => {
    const w = await world();
    await caller(w)({
      method: 'PUT',
      path: '/schedules/kept-a-while',
      body: { ...definition, expression: 'cron(* * * * ? *)' },
    });
    const tick = Math.floor(Date.now() / 60_000) * 60_000;
    await fireTick(w.schedules, ALICE, 'kept-a-while', tick);
    const fires = (await w.scanAll()).filter((i) => String(i.pk).startsWith('FIRES#kept-a-while'));
    expect(fires).toHaveLength(1);
    const expected = (Date.now() + w.config.retentionDays * 86_400_000) / 1000;
    expect(Number.isInteger(fires[0]!.expiresAt)).toBe(true);
    expect(Math.abs((fires[0]!.expiresAt as number) - expected)).toBeLessThan(60);
  });
});

describe('concurrent writes keep the table and Scheduler in agreement', () => {
  it('two writers that read the same version: only one writes the next version', async () => {
    const w = await world();
    await caller(w)({ method: 'PUT', path: '/schedules/contended', body: definition });
    const store = new ScheduleStore(w.store.ctx);
    const read = (await store.get(ALICE, 'contended'))!;
    const next = { ...read, version: read.version + 1, updatedAt: read.updatedAt + 1 };
    expect(await store.put({ ...next, expression: 'rate(7 minutes)' }, refOf(read))).toBe(true);
    expect(await store.put({ ...next, expression: 'rate(9 minutes)' }, refOf(read))).toBe(false);
    expect((await store.get(ALICE, 'contended'))!.expression).toBe('rate(7 minutes)');
  });

  it('a PUT whose Scheduler call lands after a later PUT’s brings Scheduler to what the table holds', async () => {
    const w = await world();
    const call = caller(w);
    await call({ method: 'PUT', path: '/schedules/raced', body: definition });
    const held = backends.scheduler.holdNext();
    const first = call({
      method: 'PUT',
      path: '/schedules/raced',
      body: { ...definition, expression: 'rate(7 minutes)' },
    });
    await held.arrived;
    const second = await call({
      method: 'PUT',
      path: '/schedules/raced',
      body: { ...definition, expression: 'rate(9 minutes)' },
    });
    expect(second.status).toBe(200);
    held.release();
    const late = await first;
    expect(late.status).toBe(200);
    // The first PUT's update landed last; it noticed the table moved on and sent the table's definition again.
    const stored = (await call({ method: 'GET', path: '/schedules/raced' })).body!.schedule;
    expect(stored).toMatchObject({ expression: 'rate(9 minutes)', sync: { state: 'SYNCED' } });
    expect(remote('raced')).toMatchObject({ ScheduleExpression: 'rate(9 minutes)' });
    expect(late.body!.schedule.expression).toBe('rate(9 minutes)');
  });

  it('a PUT that lands while a DELETE is removing the schedule wins; the DELETE answers 409 and Scheduler keeps the PUT’s schedule', async () => {
    const w = await world();
    const call = caller(w);
    await call({ method: 'PUT', path: '/schedules/kept', body: definition });
    const held = backends.scheduler.holdNext();
    const deleting = call({ method: 'DELETE', path: '/schedules/kept' });
    await held.arrived;
    const put = await call({
      method: 'PUT',
      path: '/schedules/kept',
      body: { ...definition, expression: 'rate(9 minutes)' },
    });
    expect(put.status).toBe(200);
    held.release();
    const deleted = await deleting;
    expect([deleted.status, deleted.body!.code]).toEqual([409, 'SCHEDULE_CONFLICT']);
    expect((await call({ method: 'GET', path: '/schedules/kept' })).body!.schedule).toMatchObject({
      expression: 'rate(9 minutes)',
      enabled: true,
      sync: { state: 'SYNCED' },
    });
    expect(remote('kept')).toMatchObject({ ScheduleExpression: 'rate(9 minutes)', State: 'ENABLED' });
  });

  it('a PUT between a DELETE’s read and its disable is no 500: the DELETE deletes what is there now', async () => {
    const w = await world();
    const store = new ScheduleStore(w.store.ctx);
    const service = new ScheduleService(
      store,
      eventBridgeSyncFor(backends.scheduler),
      w.submitter,
      w.storeClock,
    );
    await service.put('between', 'owner-a', definition);
    const disable = store.disable.bind(store);
    let interleaved = false;
    store.disable = async (ref) => {
      if (!interleaved) {
        interleaved = true;
        await service.put('between', 'owner-a', { ...definition, expression: 'rate(9 minutes)' });
      }
      return disable(ref);
    };
    await service.delete('between', 'owner-a');
    expect(await store.get(ALICE, 'between')).toBeUndefined();
    expect(remote('between')).toBeUndefined();
  });
});
