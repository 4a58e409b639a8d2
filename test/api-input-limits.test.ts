/**
 * Inputs that used to answer 500. Deeply nested payloads (tasks and schedules), forged
 * list cursors, and a DELETE of a schedule racing a PUT of it. Each is now a 4xx that says what to fix
 * (or, for the race, a decision made on what the table holds now), and a refused request writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { ValidationError } from '../shared/errors.js';
import { WriteOutcomeUnknownError } from '../shared/store/conditional-write.js';
import { MAX_PAYLOAD_DEPTH } from '../shared/task-inputs.js';
import { fromCursor } from '../shared/store/list-cursor.js';
import { ScheduleService } from '../shared/schedules/schedule-service.js';
import { ScheduleStore } from '../shared/schedules/schedule-store.js';
import { localSync } from '../shared/schedules/scheduler-sync.js';
import { demoTasks } from '../tasks/demo.js';
import { INDEX } from '../shared/table-layout.js';
import { ALICE, BOB, apiEvent, type EventSpec } from './support/api-events.js';
import { useScheduleBackends } from './support/schedule-backends.js';
import { createWorkerWorld, silentLogger, type WorkerWorld } from './support/worker-world.js';

const backends = useScheduleBackends();

async function world() {
  const w = await createWorkerWorld(backends.server.endpoint, demoTasks);
  const call = async (spec: EventSpec, schedules: ScheduleService = w.schedules) => {
    const res = await handleApiEvent(apiEvent(spec), { ...w, schedules, logger: silentLogger() });
    return {
      status: res.statusCode,
      body: (res.body ? JSON.parse(res.body) : undefined) as Record<string, any>,
    };
  };
  return { ...w, call };
}

const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const fieldsOf = (body: Record<string, any>) => (body.errors as { field: string }[]).map((e) => e.field);
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('payload nesting depth (at most MAX_PAYLOAD_DEPTH levels)', () => {
  it.each([
    ['arrays 65 deep', arrays(MAX_PAYLOAD_DEPTH + 1)],
    ['arrays 3,000 deep (the stack overflow in the fingerprint)', arrays(3_000)],
    ['objects 4,500 deep (JSON.stringify overflows)', objects(4_500)],
    ['arrays 100,000 deep', arrays(100_000)],
  ])(
    'POST /tasks with %s: a 400 on payload that names the limit, nothing written',
    async (_name, payload) => {
      const w = await world();
      for (const extra of ['', ',"idempotencyKey":"deep"']) {
        const res = await w.call({
          method: 'POST',
          path: '/tasks',
          rawBody: `{"type":"demo.echo","payload":${payload}${extra}}`,
        });
        expect(res.status).toBe(400);
        expect(fieldsOf(res.body)).toEqual(['payload']);
        expect(res.body.detail).toContain(`more than ${MAX_PAYLOAD_DEPTH} levels deep`);
      }
      expect(await w.scanAll()).toEqual([]);
    },
  );

  it(`POST /tasks at exactly ${MAX_PAYLOAD_DEPTH} levels is taken, also with an idempotency key (its fingerprint)`, async () => {
    const w = await world();
    const body = `{"type":"demo.echo","payload":${objects(MAX_PAYLOAD_DEPTH)},"idempotencyKey":"deep"}`;
    const first = await w.call({ method: 'POST', path: '/tasks', rawBody: body });
    const again = await w.call({ method: 'POST', path: '/tasks', rawBody: body });
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.task.id).toBe(first.body.task.id);
  });

  it.each([
    ['arrays 65 deep', arrays(MAX_PAYLOAD_DEPTH + 1)],
    ['arrays 4,500 deep', arrays(4_500)],
    ['objects 4,150 deep', objects(4_150)],
  ])(
    'PUT /schedules/{name} with a task payload of %s: a 400 on task.payload, nothing written',
    async (_name, payload) => {
      const w = await world();
      const res = await w.call({
        method: 'PUT',
        path: '/schedules/deep',
        rawBody: `{"expression":"rate(1 day)","task":{"type":"demo.echo","payload":${payload}}}`,
      });
      expect(res.status).toBe(400);
      expect(fieldsOf(res.body)).toEqual(['task.payload']);
      expect(res.body.detail).toContain(`the limit is ${MAX_PAYLOAD_DEPTH}`);
      expect(await w.scanAll()).toEqual([]);
    },
  );

  it('a schedule payload is checked as enqueue checks one, so it cannot fail at every fire', async () => {
    const w = await world();
    await expect(
      w.schedules.put('nan', ALICE, {
        expression: 'rate(1 day)',
        task: { type: 'demo.echo', payload: { n: Number.NaN } },
      }),
    ).rejects.toThrow(/task\.payload: payload must be plain JSON/);
    await expect(
      w.schedules.put('big', ALICE, {
        expression: 'rate(1 day)',
        task: { type: 'demo.echo', payload: 'x'.repeat(300_000) },
      }),
    ).rejects.toThrow(/task\.payload: payload is \d+ bytes/);
    expect(await w.scanAll()).toEqual([]);
  });
});

describe('forged list cursors', () => {
  const tasksCursor = (key: Record<string, unknown>) => ({
    method: 'GET',
    path: '/tasks',
    query: { cursor: b64(key) },
  });

  it.each<[string, Record<string, unknown>]>([
    ['empty key strings (DynamoDB refuses them)', { pk: '', sk: '', ownerPk: ALICE, ownerSk: '' }],
    ['a sort key over 1 KB', { pk: 'TASK#a', sk: 'x'.repeat(1_100), ownerPk: ALICE, ownerSk: '1#a' }],
    ['a key of another partition', { pk: 'SCHEDULES', sk: 'nightly', ownerPk: ALICE, ownerSk: 'nightly' }],
    ['an index key that is not the task’s', { pk: 'TASK#a', sk: 'TASK', ownerPk: ALICE, ownerSk: '1#b' }],
    ['a number for a key', { pk: 'TASK#a', sk: 'TASK', ownerPk: ALICE, ownerSk: 1 }],
    ['another caller’s position', { pk: 'TASK#a', sk: 'TASK', ownerPk: BOB, ownerSk: '1#a' }],
    ['an extra member', { pk: 'TASK#a', sk: 'TASK', ownerPk: ALICE, ownerSk: '1#a', x: 1 }],
  ])('GET /tasks with %s: a 400 on cursor that says to start again', async (_name, key) => {
    const w = await world();
    await w.call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo' } });
    const res = await w.call(tasksCursor(key) as EventSpec);
    expect(res.status).toBe(400);
    expect(fieldsOf(res.body)).toEqual(['cursor']);
    expect(res.body.detail).toContain('start again without one');
  });

  it('a cursor of the right shape inside the caller’s own list is a page (it only moves within that list)', async () => {
    const w = await world();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await w.call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo', payload: i } })).body.task
          .id,
      );
    const res = await w.call(
      tasksCursor({ pk: 'TASK#zzz', sk: 'TASK', ownerPk: ALICE, ownerSk: '9999999999999#zzz' }) as EventSpec,
    );
    expect(res.status).toBe(200);
    expect(res.body.tasks.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
  });

  it('GET /schedules cursors are checked the same way', async () => {
    const w = await world();
    for (const key of [
      { pk: '', sk: '', ownerPk: `SCHEDULES#${ALICE}`, ownerSk: '' },
      { pk: 'SCHEDULES', sk: 'a', ownerPk: `SCHEDULES#${BOB}`, ownerSk: 'a' },
      { pk: 'TASK#a', sk: 'TASK', ownerPk: ALICE, ownerSk: '1#a' },
    ]) {
      const res = await w.call({ method: 'GET', path: '/schedules', query: { cursor: b64(key) } });
      expect([res.status, fieldsOf(res.body)]).toEqual([400, ['cursor']]);
    }
    expect(
      (await w.call({ method: 'GET', path: '/schedules', query: { cursor: 'x'.repeat(3000) } })).status,
    ).toBe(400);
  });

  it('a start key DynamoDB itself refuses (ValidationException) is a ValidationError on cursor, not a 500', async () => {
    const w = await world();
    const query = () =>
      w.doc.send(
        new QueryCommand({
          TableName: w.config.tableName,
          IndexName: INDEX.owner.name,
          KeyConditionExpression: '#o = :o',
          ExpressionAttributeNames: { '#o': INDEX.owner.partition },
          ExpressionAttributeValues: { ':o': ALICE },
          ExclusiveStartKey: { pk: '', sk: '', ownerPk: ALICE, ownerSk: '' },
        }),
      );
    // The same query not started at a caller's cursor is our own failure: it stays what it is.
    await expect(fromCursor(query, false, 'listTasks')).rejects.toMatchObject({
      name: 'ValidationException',
    });
    const error = await fromCursor(query, true, 'listTasks').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems.map((p) => p.path)).toEqual(['cursor']);
  });
});

describe('DELETE racing PUT of the same schedule (same owner)', () => {
  const definition = { expression: 'rate(1 hour)', task: { type: 'demo.echo' } };

  /** A service whose DELETE stops between its read and its disable until `go`. */
  function heldDelete(w: WorkerWorld) {
    const store = new ScheduleStore(w.store.ctx);
    const disable = store.disable.bind(store);
    let go!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    let reached!: () => void;
    const atDisable = new Promise<void>((r) => (reached = r));
    let first = true;
    store.disable = async (ref) => {
      if (first) {
        first = false;
        reached();
        await gate;
      }
      return disable(ref);
    };
    return { service: new ScheduleService(store, localSync, w.submitter, w.storeClock), go, atDisable };
  }

  it('a PUT between the DELETE’s read and its disable: no 500; the DELETE decides again on what is there now', async () => {
    const w = await world();
    await w.call({ method: 'PUT', path: '/schedules/s', body: definition });
    const held = heldDelete(w);
    const deleting = w.call({ method: 'DELETE', path: '/schedules/s' }, held.service);
    await held.atDisable;
    const put = await w.call({
      method: 'PUT',
      path: '/schedules/s',
      body: { ...definition, expression: 'rate(2 hours)' },
    });
    held.go();
    const deleted = await deleting;
    expect(put.status).toBe(200);
    expect(deleted.status).toBe(204);
    expect((await w.call({ method: 'GET', path: '/schedules/s' })).status).toBe(404);
  });

  it('a PUT between the DELETE’s disable and its delete wins: the DELETE answers 409 and the PUT’s schedule stays, still LOCAL', async () => {
    const w = await world();
    await w.call({ method: 'PUT', path: '/schedules/s', body: definition });
    const store = new ScheduleStore(w.store.ctx);
    const remove = store.delete.bind(store);
    let put: Promise<{ status: number }> | undefined;
    store.delete = async (ref) => {
      put ??= w.call({
        method: 'PUT',
        path: '/schedules/s',
        body: { ...definition, expression: 'rate(2 hours)' },
      });
      await put;
      return remove(ref);
    };
    const deleted = await w.call(
      { method: 'DELETE', path: '/schedules/s' },
      new ScheduleService(store, localSync, w.submitter, w.storeClock),
    );
    expect([deleted.status, deleted.body.code, (await put!).status]).toEqual([409, 'SCHEDULE_CONFLICT', 200]);
    expect((await w.call({ method: 'GET', path: '/schedules/s' })).body.schedule).toMatchObject({
      expression: 'rate(2 hours)',
      enabled: true,
      sync: { state: 'LOCAL' },
    });
  });

  it('a DELETE between the DELETE’s read and its disable: one 204, the other 404', async () => {
    const w = await world();
    await w.call({ method: 'PUT', path: '/schedules/s', body: definition });
    const held = heldDelete(w);
    const deleting = w.call({ method: 'DELETE', path: '/schedules/s' }, held.service);
    await held.atDisable;
    const other = await w.call({ method: 'DELETE', path: '/schedules/s' });
    held.go();
    expect([other.status, (await deleting).status]).toEqual([204, 404]);
  });
});

describe('failures that are not the input’s', () => {
  it('a write whose outcome is unknown (the table did not answer in time) is a 503 to retry, not a 400', async () => {
    const w = await world();
    w.submitter.enqueue = async () => {
      throw new WriteOutcomeUnknownError({ pk: 'TASK#x' }, 'write-1', { cause: new Error('deadline') });
    };
    const res = await w.call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo' } });
    expect([res.status, res.body.code]).toEqual([503, 'WRITE_OUTCOME_UNKNOWN']);
    expect(res.body.detail).toContain('idempotencyKey');
  });
});
