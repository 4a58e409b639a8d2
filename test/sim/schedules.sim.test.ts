/** User schedules in the deployed shape: PUT goes through EventBridge Scheduler's API, ticks invoke the fire function. */
import { describe, expect, it } from 'vitest';
import { api, fn, functionDenials, simState, waitFor } from './support/sim-client.js';

interface Fire {
  scheduledTime: string;
  firedAt: string;
  taskId: string;
}

const userSchedules = async () =>
  ((await simState()).schedules as { name: string; groupName: string }[]).filter((s) =>
    s.groupName.includes('UserSchedules'),
  );
/** Names in Scheduler are per owner: `<name>-<32 hex of sha256(owner, name)>`. */
const inScheduler = async (name: string) =>
  (await userSchedules()).some((s) => new RegExp(`^${name}-[0-9a-f]{32}$`).test(s.name));

describe('a user schedule created through the API', () => {
  it('rate(1 minute): each tick invokes the fire function once and makes one task; the fires list them with no missed tick', async () => {
    const put = await api('PUT', '/schedules/every-minute', {
      expression: 'rate(1 minute)',
      task: { type: 'demo.echo', payload: { from: 'schedule' } },
    });
    expect(put.status).toBe(201);
    expect(put.body.schedule.sync).toMatchObject({ state: 'SYNCED' });
    expect(await inScheduler('every-minute')).toBe(true);

    const fires = await waitFor(
      'two fires',
      async () => {
        const res = await api('GET', '/schedules/every-minute/fires?limit=10');
        return (res.body.fires as Fire[]).length >= 2 ? res.body : undefined;
      },
      4 * 60_000,
      5_000,
    );
    expect(fires.missed).toEqual([]);
    const taskIds = (fires.fires as Fire[]).map((f) => f.taskId);
    expect(new Set(taskIds).size).toBe(taskIds.length);
    for (const id of taskIds)
      expect((await api('GET', `/tasks/${id}`)).body.task).toMatchObject({
        type: 'demo.echo',
        payload: { from: 'schedule' },
      });
    // Scheduler's scheduled time has second precision and is anchored on its own clock.
    for (const f of fires.fires as Fire[]) expect(f.scheduledTime).toMatch(/:\d\dZ$|\.000Z$/);

    const state = await simState();
    const fire = fn(state, 'Fire');
    expect(fire.invocations).toBeGreaterThanOrEqual(2);
    expect(fire.errors).toEqual({});
    expect((await api('DELETE', '/schedules/every-minute')).status).toBe(204);
    expect(await inScheduler('every-minute')).toBe(false);
  });

  it('an at() schedule fires once and is then gone from Scheduler', async () => {
    const when = new Date(Date.now() + 75_000).toISOString().slice(0, 19);
    const put = await api('PUT', '/schedules/once', {
      expression: `at(${when})`,
      timezone: 'UTC',
      task: { type: 'demo.echo', payload: 'once' },
    });
    expect(put.status).toBe(201);
    expect(await inScheduler('once')).toBe(true);
    const fired = await waitFor(
      'the at() fire',
      async () => {
        const res = await api('GET', '/schedules/once/fires');
        return res.status === 200 && (res.body.fires as Fire[]).length === 1
          ? (res.body.fires as Fire[])
          : undefined;
      },
      3 * 60_000,
      3_000,
    );
    expect(fired[0]!.scheduledTime.slice(0, 19)).toBe(when);
    await waitFor(
      'at() schedule deleted after completion',
      async () => ((await inScheduler('once')) ? undefined : true),
      60_000,
      2_000,
    );
  });

  it('a time zone or expression Scheduler refuses is a 400 that says why, never a 503', async () => {
    // Refused by the API's own checks, before Scheduler is asked.
    for (const [timezone, expression] of [
      ['EST', 'cron(0 9 * * ? *)'],
      ['Mars/Olympus', 'cron(0 9 * * ? *)'],
      ['UTC', 'cron(0 9 32 * ? *)'],
      ['UTC', `at(${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)})`],
    ] as const) {
      const res = await api('PUT', '/schedules/refused', {
        expression,
        timezone,
        task: { type: 'demo.echo' },
      });
      expect({ timezone, expression, status: res.status }).toEqual({ timezone, expression, status: 400 });
      expect(JSON.stringify(res.body)).toMatch(/time ?zone|expression|cron|past/i);
    }
    // Passed by the API's checks, refused by EventBridge Scheduler's (year past 2199, weekday 8): a 400 with its reason, nothing kept.
    for (const expression of ['cron(0 9 ? * MON-FRI 2300)', 'cron(0 9 ? * 8 *)']) {
      const res = await api('PUT', '/schedules/refused', {
        expression,
        timezone: 'UTC',
        task: { type: 'demo.echo' },
      });
      expect({ expression, status: res.status, code: res.body.code }).toEqual({
        expression,
        status: 400,
        code: 'SCHEDULE_REJECTED',
      });
      expect(JSON.stringify(res.body)).toMatch(/ValidationException/);
      expect((await api('GET', '/schedules/refused')).status).toBe(404);
    }
    // Zones written in another case or as an alias are stored and sent in their canonical form.
    for (const [given, canonical] of [
      ['europe/berlin', 'Europe/Berlin'],
      ['US/Pacific', 'America/Los_Angeles'],
    ] as const) {
      const res = await api('PUT', '/schedules/zoned', {
        expression: 'cron(0 9 * * ? *)',
        timezone: given,
        task: { type: 'demo.echo' },
      });
      expect(res.status).toBe(201);
      expect(res.body.schedule.timezone).toBe(canonical);
      expect((await api('DELETE', '/schedules/zoned')).status).toBe(204);
    }
  });

  it('every request the API and fire functions made was allowed by their roles', async () => {
    expect(functionDenials(await simState())).toEqual([]);
  });
});
