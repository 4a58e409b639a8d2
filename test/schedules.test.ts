import { describe, expect, it } from 'vitest';
import { definitionKey } from '../shared/schedules/schedule-store.js';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { demoTasks } from '../tasks/demo.js';
import { apiEvent, ALICE, BOB, type EventSpec } from './support/api-events.js';
import { createWorkerWorld, silentLogger, type WorkerWorld } from './support/worker-world.js';
import { eventBridgeSyncFor } from './support/fake-scheduler.js';
import { useScheduleBackends } from './support/schedule-backends.js';
import { fireTick } from './support/fire-tick.js';
import { eventBridgeName } from '../shared/schedules/scheduler-sync.js';

/** The fake Scheduler's key of an owner's schedule (group/name). */
const remoteKey = (owner: string, name: string) => `leasehold/${eventBridgeName({ owner, name })}`;

const backends = useScheduleBackends();

const caller = (w: WorkerWorld) => async (spec: EventSpec) => {
  const res = await handleApiEvent(apiEvent(spec), { ...w, logger: silentLogger() });
  return {
    status: res.statusCode,
    body: res.body ? (JSON.parse(res.body) as Record<string, any>) : undefined,
  };
};
const definition = {
  expression: 'rate(5 minutes)',
  task: { type: 'demo.echo', payload: { report: 'daily' } },
};

describe('schedules through the API (evaluated locally)', () => {
  it('creates, reads, lists, replaces and deletes a schedule', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    const call = caller(w);
    const created = await call({ method: 'PUT', path: '/schedules/daily-report', body: definition });
    expect(created.status).toBe(201);
    expect(created.body!.schedule).toMatchObject({
      name: 'daily-report',
      expression: 'rate(5 minutes)',
      timezone: 'UTC',
      enabled: true,
      sync: { state: 'LOCAL' },
    });
    expect(Date.parse(created.body!.schedule.nextFireAt) - Date.now()).toBeGreaterThan(4 * 60_000);
    const replaced = await call({
      method: 'PUT',
      path: '/schedules/daily-report',
      body: { ...definition, expression: 'cron(0 9 ? * MON-FRI *)', timezone: 'Europe/Berlin' },
    });
    expect(replaced.status).toBe(200);
    expect((await call({ method: 'GET', path: '/schedules/daily-report' })).body!.schedule).toMatchObject({
      expression: 'cron(0 9 ? * MON-FRI *)',
      timezone: 'Europe/Berlin',
    });
    expect(
      (await call({ method: 'GET', path: '/schedules' })).body!.schedules.map(
        (s: { name: string }) => s.name,
      ),
    ).toEqual(['daily-report']);
    expect((await call({ method: 'GET', path: '/schedules', caller: BOB })).body!.schedules).toEqual([]);
    expect((await call({ method: 'GET', path: '/schedules/daily-report', caller: BOB })).status).toBe(404);
    expect((await call({ method: 'DELETE', path: '/schedules/daily-report', caller: BOB })).status).toBe(404);
    expect((await call({ method: 'DELETE', path: '/schedules/daily-report' })).status).toBe(204);
    expect((await call({ method: 'GET', path: '/schedules/daily-report' })).status).toBe(404);
  });

  it.each<[string, unknown, string, string]>([
    [
      'a bad expression',
      { ...definition, expression: 'every day' },
      'expression',
      'must be rate(...), cron(...) or at(...)',
    ],
    [
      'a cron without ?',
      { ...definition, expression: 'cron(0 9 * * MON *)' },
      'expression',
      'exactly one of day-of-month and day-of-week',
    ],
    [
      'an unknown time zone',
      { ...definition, timezone: 'Europe/Atlantis' },
      'timezone',
      'is not an IANA time zone',
    ],
    [
      'an unknown task type',
      { ...definition, task: { type: 'nope' } },
      'task.type',
      'unknown task type "nope"',
    ],
    [
      'a payload the task refuses',
      { ...definition, task: { type: 'demo.sleep', payload: { ms: 'long' } } },
      'task.payload.ms',
      'expected number',
    ],
    ['no task', { expression: 'rate(1 day)' }, 'task', 'expected object'],
  ])('refuses %s with a 400 that says why, writing nothing', async (_name, body, field, message) => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    const res = await caller(w)({ method: 'PUT', path: '/schedules/bad-one', body });
    expect(res.status).toBe(400);
    const error = res.body!.errors.find((e: { field: string }) => e.field === field);
    expect(error.message).toContain(message);
    expect(await w.scanAll()).toEqual([]);
  });

  it('refuses a bad name', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    expect(
      (await caller(w)({ method: 'PUT', path: '/schedules/has%20space', body: definition })).status,
    ).toBe(400);
  });

  it('a tick fired twice (a duplicated delivery, a second node) makes one task; fires are recorded and missed ticks shown', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    const call = caller(w);
    await call({
      method: 'PUT',
      path: '/schedules/every-minute',
      body: { ...definition, expression: 'cron(* * * * ? *)' },
    });
    const tick = Math.floor(Date.now() / 60_000) * 60_000;
    const first = await fireTick(w.schedules, ALICE, 'every-minute', tick);
    const second = await fireTick(w.schedules, ALICE, 'every-minute', tick);
    expect(first).toMatchObject({ fired: true, created: true });
    expect(second).toEqual({ ...first, created: false });
    const tasks = (await w.scanAll()).filter((i) => i.type === 'demo.echo');
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      owner: ALICE,
      idempotencyKey: `schedule:every-minute:${new Date(tick).toISOString()}`,
      payload: JSON.stringify({ report: 'daily' }),
    });

    const fires = await call({ method: 'GET', path: '/schedules/every-minute/fires' });
    expect(fires.body!.fires).toEqual([
      {
        scheduledTime: new Date(tick).toISOString(),
        firedAt: expect.any(String),
        taskId: (first as { taskId: string }).taskId,
      },
    ]);
    expect(fires.body!.missed).toEqual([]);
    expect(
      (await call({ method: 'GET', path: '/schedules/every-minute/fires', query: { limit: '0' } })).status,
    ).toBe(400);
  });

  it('a disabled or deleted schedule fires nothing', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    await caller(w)({ method: 'PUT', path: '/schedules/paused', body: { ...definition, enabled: false } });
    expect(await fireTick(w.schedules, ALICE, 'paused', Date.now())).toEqual({
      fired: false,
      reason: 'disabled',
    });
    expect(await fireTick(w.schedules, ALICE, 'never-created', Date.now())).toEqual({
      fired: false,
      reason: 'unknown-schedule',
    });
  });

  it('lists ticks that have no fire as missed', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    await caller(w)({
      method: 'PUT',
      path: '/schedules/gappy',
      body: { ...definition, expression: 'rate(1 minute)' },
    });
    const def = await w.schedules.get('gappy', ALICE);
    // Pretend the schedule was made (its last PUT, where a rate's rhythm starts) ten minutes ago and only its third tick was delivered.
    const created = Date.now() - 10 * 60_000;
    await w.doc.send(
      new (await import('@aws-sdk/lib-dynamodb')).UpdateCommand({
        TableName: w.config.tableName,
        Key: definitionKey(ALICE, 'gappy'),
        UpdateExpression: 'SET createdAt = :c, updatedAt = :c',
        ExpressionAttributeValues: { ':c': created },
      }),
    );
    await fireTick(w.schedules, ALICE, 'gappy', created + 3 * 60_000);
    const { fires, missed } = await w.schedules.fires('gappy', def.owner);
    expect(fires.map((f) => f.scheduledTime)).toEqual([created + 3 * 60_000]);
    // Ticks 1..8 are settled (two minutes' grace); all but tick 3 are missed.
    expect(missed).toEqual([1, 2, 4, 5, 6, 7, 8].map((k) => created + k * 60_000));
  });
});

describe('schedule names are per owner (review 1, finding 17)', () => {
  it('two owners each have their own "nightly": no 409, no sign of the other, each fires as its owner', async () => {
    const w = await createWorkerWorld(
      backends.server.endpoint,
      demoTasks,
      {},
      eventBridgeSyncFor(backends.scheduler),
    );
    const call = caller(w);
    const alices = { ...definition, task: { type: 'demo.echo', payload: { of: 'alice' } } };
    const bobs = { ...definition, task: { type: 'demo.echo', payload: { of: 'bob' } } };
    expect((await call({ method: 'PUT', path: '/schedules/nightly', body: alices })).status).toBe(201);
    expect((await call({ method: 'PUT', path: '/schedules/nightly', body: bobs, caller: BOB })).status).toBe(
      201,
    );
    for (const [owner, of] of [
      [ALICE, 'alice'],
      [BOB, 'bob'],
    ] as const) {
      const got = await call({ method: 'GET', path: '/schedules/nightly', caller: owner });
      expect(got.body!.schedule.task.payload).toEqual({ of });
      expect((await call({ method: 'GET', path: '/schedules', caller: owner })).body!.schedules).toHaveLength(
        1,
      );
      // One EventBridge schedule each, under a name no other owner's can take.
      expect(backends.scheduler.schedules.get(remoteKey(owner, 'nightly'))).toBeDefined();
    }
    expect(remoteKey(ALICE, 'nightly')).not.toBe(remoteKey(BOB, 'nightly'));
    const tick = Math.floor(Date.now() / 60_000) * 60_000;
    const fired = [
      await fireTick(w.schedules, ALICE, 'nightly', tick),
      await fireTick(w.schedules, BOB, 'nightly', tick),
    ];
    expect(fired.every((f) => f.fired)).toBe(true);
    const tasks = (await w.scanAll()).filter((i) => i.type === 'demo.echo');
    expect(tasks.map((t) => [t.owner, t.payload]).sort()).toEqual([
      [ALICE, JSON.stringify({ of: 'alice' })],
      [BOB, JSON.stringify({ of: 'bob' })],
    ]);
    // Bob deleting his leaves alice's.
    expect((await call({ method: 'DELETE', path: '/schedules/nightly', caller: BOB })).status).toBe(204);
    expect(backends.scheduler.schedules.has(remoteKey(BOB, 'nightly'))).toBe(false);
    expect((await call({ method: 'GET', path: '/schedules/nightly' })).status).toBe(200);
  });

  it("a delivery of a name's earlier creation (deleted and created again since) fires nothing", async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
    const call = caller(w);
    await call({ method: 'PUT', path: '/schedules/reborn', body: definition });
    const first = (await w.schedules.get('reborn', ALICE)).generation!;
    await call({ method: 'DELETE', path: '/schedules/reborn' });
    await call({
      method: 'PUT',
      path: '/schedules/reborn',
      body: { ...definition, task: { type: 'demo.echo' } },
    });
    const second = (await w.schedules.get('reborn', ALICE)).generation!;
    expect(second).not.toBe(first);
    const tick = Date.now();
    const fire = (owner: string, generation: string) =>
      w.schedules.fire({ owner, name: 'reborn', generation, scheduledTime: tick });
    // EventBridge retries a failed delivery for up to an hour: one of the first creation arrives now.
    expect(await fire(ALICE, first)).toEqual({ fired: false, reason: 'stale-generation' });
    expect((await w.scanAll()).filter((i) => i.type === 'demo.echo')).toEqual([]);
    expect(await fire(ALICE, second)).toMatchObject({ fired: true, created: true });
    // Another owner's delivery never fires alice's schedule, whatever its generation.
    expect(await fire(BOB, second)).toEqual({ fired: false, reason: 'unknown-schedule' });
  });
});

describe('schedules in AWS: the table and EventBridge Scheduler kept in step', () => {
  const sync = () => eventBridgeSyncFor(backends.scheduler);

  it('creates the matching EventBridge schedule, with the scheduled time in its input', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks, {}, sync());
    const res = await caller(w)({
      method: 'PUT',
      path: '/schedules/synced',
      body: { ...definition, timezone: 'Europe/Berlin' },
    });
    expect(res.status).toBe(201);
    expect(res.body!.schedule.sync).toEqual({ state: 'SYNCED' });
    const remote = backends.scheduler.schedules.get(remoteKey(ALICE, 'synced'))!;
    expect(remote).toMatchObject({
      ScheduleExpression: 'rate(5 minutes)',
      ScheduleExpressionTimezone: 'Europe/Berlin',
      State: 'ENABLED',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: 'arn:aws:lambda:eu-west-1:123456789012:function:fire',
        RoleArn: 'arn:aws:iam::123456789012:role/scheduler',
        DeadLetterConfig: { Arn: 'arn:aws:sqs:eu-west-1:123456789012:dlq' },
      },
    });
    // Owner and generation: a late delivery for a name since deleted and created again fires nothing.
    expect(JSON.parse((remote.Target as { Input: string }).Input)).toEqual({
      scheduleName: 'synced',
      owner: ALICE,
      generation: (await w.schedules.get('synced', ALICE)).generation,
      scheduledTime: '<aws.scheduler.scheduled-time>',
    });
    // A replacement updates it in place.
    await caller(w)({ method: 'PUT', path: '/schedules/synced', body: { ...definition, enabled: false } });
    expect(backends.scheduler.schedules.get(remoteKey(ALICE, 'synced'))).toMatchObject({ State: 'DISABLED' });
  });

  it('a failed EventBridge call leaves a clear error and a FAILED state; the same PUT again repairs it', async () => {
    const w = await createWorkerWorld(backends.server.endpoint, demoTasks, {}, sync());
    const call = caller(w);
    backends.scheduler.failNext(1);
    const failed = await call({ method: 'PUT', path: '/schedules/flaky', body: definition });
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ code: 'SCHEDULE_NOT_SYNCED' });
    expect(failed.body!.detail).toContain('Send the same PUT again');
    expect((await call({ method: 'GET', path: '/schedules/flaky' })).body!.schedule.sync).toMatchObject({
      state: 'FAILED',
      error: expect.stringContaining('injected failure'),
    });
    expect(backends.scheduler.schedules.has(remoteKey(ALICE, 'flaky'))).toBe(false);

    const repaired = await call({ method: 'PUT', path: '/schedules/flaky', body: definition });
    expect(repaired.status).toBe(200);
    expect(repaired.body!.schedule.sync).toEqual({ state: 'SYNCED' });
    expect(backends.scheduler.schedules.has(remoteKey(ALICE, 'flaky'))).toBe(true);

    // A failed delete disables the schedule at once (no fires) and says to retry; the retry finishes it.
    backends.scheduler.failNext(1);
    expect((await call({ method: 'DELETE', path: '/schedules/flaky' })).status).toBe(503);
    expect(await fireTick(w.schedules, ALICE, 'flaky', Date.now())).toEqual({
      fired: false,
      reason: 'disabled',
    });
    expect((await call({ method: 'DELETE', path: '/schedules/flaky' })).status).toBe(204);
    expect(backends.scheduler.schedules.has(remoteKey(ALICE, 'flaky'))).toBe(false);
    expect((await call({ method: 'GET', path: '/schedules/flaky' })).status).toBe(404);
  });
});
