import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ensureTable } from '../shared/store/table-setup.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { BOB, apiEvent, type EventSpec } from './support/api-events.js';
import { API_ROUTES, handleApiEvent, type ApiDeps } from '../shared/api/api-handler.js';
import { openApiFile } from '../shared/api/openapi-file.js';
import { silentLogger } from './support/worker-world.js';
import { openApiDocument } from '../shared/api/openapi.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { OpenApiConformance, exchangeOf } from './support/openapi-conformance.js';

let server: TestDynamo;
let handler: (typeof import('../functions/api.js'))['handler'];
let doc: DynamoDBDocumentClient;
const table = `api-${process.pid}`;

beforeAll(async () => {
  server = await startTestDynamo();
  Object.assign(process.env, {
    LEASEHOLD_DYNAMODB_ENDPOINT: server.endpoint,
    LEASEHOLD_TABLE: table,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  const client = new DynamoDBClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  await ensureTable(client, table);
  doc = DynamoDBDocumentClient.from(client);
  ({ handler } = await import('../functions/api.js'));
});
afterAll(() => server.close());

/** Every exchange below is checked against the OpenAPI document: a mismatch fails the test that made it. */
const conformance = new OpenApiConformance(openApiDocument(API_ROUTES));
const call = async (spec: EventSpec) => {
  const event = apiEvent(spec);
  const res = await handler(event);
  conformance.assertConforms(exchangeOf(event, res));
  // A 204 has no body.
  const body = (res.body === '' ? undefined : JSON.parse(res.body)) as Record<string, any>;
  return { status: res.statusCode, headers: res.headers, body };
};
const itemCount = async () =>
  (await doc.send(new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }))).Count ?? 0;

describe('POST /tasks', () => {
  it('creates a task: 201, Location, the task in JSON with ISO times', async () => {
    const res = await call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.echo', payload: { hello: 'world' }, priority: 5 },
    });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/tasks/${res.body.task.id}`);
    expect(res.body.task).toMatchObject({
      type: 'demo.echo',
      status: 'QUEUED',
      priority: 5,
      payload: { hello: 'world' },
      attempts: 0,
      maxAttempts: 3,
    });
    expect(res.body.task.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The enqueue's own write, by rule: one request, the task item (1 unit), its ready and owner entries.
    expect(res.body.task.cost).toEqual({
      requests: 1,
      readUnits: 0,
      writeUnits: 1,
      indexWriteUnits: 2,
      handlerMs: 0,
    });
    expect(Object.keys(res.body.task).sort()).toEqual([
      'attempts',
      'availableAt',
      'cost',
      'createdAt',
      'id',
      'maxAttempts',
      'payload',
      'priority',
      'status',
      'type',
      'updatedAt',
    ]);
  });

  it('a repeated idempotency key with the same body answers 200 with the first task; another body is 409', async () => {
    const body = { type: 'demo.echo', payload: { n: 1 }, idempotencyKey: 'order-42' };
    const first = await call({ method: 'POST', path: '/tasks', body });
    const again = await call({ method: 'POST', path: '/tasks', body });
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.task.id).toBe(first.body.task.id);
    const conflict = await call({ method: 'POST', path: '/tasks', body: { ...body, payload: { n: 2 } } });
    expect(conflict.status).toBe(409);
    expect(conflict.headers['content-type']).toBe('application/problem+json');
    expect(conflict.body).toMatchObject({
      status: 409,
      code: 'IDEMPOTENCY_CONFLICT',
      taskId: first.body.task.id,
    });
    // The key belongs to the caller: another caller with the same key gets its own task.
    expect((await call({ method: 'POST', path: '/tasks', body, caller: BOB })).status).toBe(201);
  });

  it('takes a group and shows it on the task', async () => {
    const created = await call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.sleep', payload: { ms: 1 }, group: 'customer-7' },
    });
    expect(created.status).toBe(201);
    expect(created.body.task.group).toBe('customer-7');
    const read = await call({ method: 'GET', path: `/tasks/${created.body.task.id}` });
    expect(read.body.task.group).toBe('customer-7');
  });

  it('collapses debounced enqueues of one key into one task: 201, then 200 joined', async () => {
    const body = { type: 'demo.echo', payload: { n: 1 }, debounce: { key: 'user-9', windowMs: 60_000 } };
    const first = await call({ method: 'POST', path: '/tasks', body });
    const second = await call({ method: 'POST', path: '/tasks', body: { ...body, payload: { n: 2 } } });
    expect([first.status, second.status]).toEqual([201, 200]);
    expect(second.body.joined).toBe(true);
    expect(second.body.task.id).toBe(first.body.task.id);
    const read = await call({ method: 'GET', path: `/tasks/${first.body.task.id}` });
    expect(read.body.task.payload).toEqual({ n: 2 });
    const both = await call({
      method: 'POST',
      path: '/tasks',
      body: { ...body, idempotencyKey: 'k1' },
    });
    expect(both.status).toBe(400);
    expect(JSON.stringify(both.body)).toContain('debounce');
  });

  it('takes delaySeconds or runAt, timeoutSeconds and maxAttempts', async () => {
    const runAt = '2030-01-01T00:00:00Z';
    const res = await call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.sleep', payload: { ms: 10 }, runAt, maxAttempts: 7, timeoutSeconds: 60 },
    });
    expect(res.status).toBe(201);
    expect(res.body.task).toMatchObject({ availableAt: '2030-01-01T00:00:00.000Z', maxAttempts: 7 });
  });

  it.each<[string, EventSpec, number, string]>([
    [
      'invalid JSON',
      { method: 'POST', path: '/tasks', rawBody: '{"type": "demo.echo",' },
      400,
      'INVALID_JSON',
    ],
    ['an unknown task type', { method: 'POST', path: '/tasks', body: { type: 'nope' } }, 400, 'type'],
    [
      'a payload the schema refuses',
      { method: 'POST', path: '/tasks', body: { type: 'demo.sleep', payload: { ms: 'long' } } },
      400,
      'payload.ms',
    ],
    [
      'a fractional priority',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', priority: 0.5 } },
      400,
      'priority',
    ],
    [
      'a priority out of range',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', priority: 1001 } },
      400,
      'priority',
    ],
    [
      'both delaySeconds and runAt',
      {
        method: 'POST',
        path: '/tasks',
        body: { type: 'demo.echo', delaySeconds: 1, runAt: '2030-01-01T00:00:00Z' },
      },
      400,
      'runAt',
    ],
    [
      'a runAt without a zone',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', runAt: '2030-01-01T00:00:00' } },
      400,
      'runAt',
    ],
    [
      'maxAttempts 0',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', maxAttempts: 0 } },
      400,
      'maxAttempts',
    ],
    [
      'a timeout beyond the maximum execution time',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', timeoutSeconds: 3600 } },
      400,
      'timeoutSeconds',
    ],
    [
      'an idempotency key of 129 characters',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', idempotencyKey: 'k'.repeat(129) } },
      400,
      'idempotencyKey',
    ],
    [
      // JSON allows "\ud800"; as UTF-8 it is U+FFFD, so 'order-\udbff' would name the same task.
      'an idempotency key holding a lone surrogate',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', idempotencyKey: 'order-\ud800' } },
      400,
      'idempotencyKey',
    ],
    [
      'a group with a space',
      { method: 'POST', path: '/tasks', body: { type: 'demo.sleep', group: 'customer 1' } },
      400,
      'group',
    ],
    [
      'a group of 129 characters',
      { method: 'POST', path: '/tasks', body: { type: 'demo.sleep', group: 'g'.repeat(129) } },
      400,
      'group',
    ],
    [
      'an unknown field',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', owner: 'someone-else' } },
      400,
      'body',
    ],
    ['a JSON array body', { method: 'POST', path: '/tasks', body: [1, 2] }, 400, 'body'],
    [
      'a body over 256 KB',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo', payload: 'x'.repeat(270_000) } },
      413,
      'BODY_TOO_LARGE',
    ],
    [
      'a form body',
      {
        method: 'POST',
        path: '/tasks',
        rawBody: 'type=demo.echo',
        contentType: 'application/x-www-form-urlencoded',
      },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'no content type',
      { method: 'POST', path: '/tasks', rawBody: '{}', contentType: null },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'an unsigned request',
      { method: 'POST', path: '/tasks', body: { type: 'demo.echo' }, caller: null },
      401,
      'NO_CALLER_IDENTITY',
    ],
  ])('refuses %s: a problem that says what to fix, nothing written', async (_name, spec, status, mention) => {
    const before = await itemCount();
    const res = await call(spec);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'about:blank', status });
    expect(typeof res.body.detail).toBe('string');
    // A field error names the field; other refusals carry their code.
    if (/^[A-Z_]+$/.test(mention)) expect(res.body.code).toBe(mention);
    else expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(mention);
    expect(await itemCount()).toBe(before);
  });

  it('accepts a base64-encoded body, as API Gateway sends binary-safe bodies', async () => {
    const res = await call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.echo', payload: 'é' },
      base64: true,
      contentType: 'application/json; charset=utf-8',
    });
    expect(res.status).toBe(201);
    expect(res.body.task.payload).toBe('é');
  });
});

describe('reading, listing, cancelling, retrying', () => {
  it('GET /tasks/{id}: 200 for the owner, 404 for anyone else and for unknown ids', async () => {
    const created = await call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo' } });
    const id = created.body.task.id as string;
    expect((await call({ method: 'GET', path: `/tasks/${id}` })).body.task.id).toBe(id);
    expect((await call({ method: 'GET', path: `/tasks/${id}`, caller: BOB })).status).toBe(404);
    expect((await call({ method: 'GET', path: '/tasks/does-not-exist' })).status).toBe(404);
  });

  it('GET /tasks lists the caller’s tasks newest first, filtered, with a cursor', async () => {
    const caller = 'arn:aws:sts::123456789012:assumed-role/Lister/session-1';
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await call({
            method: 'POST',
            path: '/tasks',
            body: { type: i % 2 ? 'demo.fail' : 'demo.echo', payload: i % 2 ? { failTimes: 0 } : i },
            caller,
          })
        ).body.task.id,
      );
    // Another session of the same role is the same owner.
    const sameRole = 'arn:aws:sts::123456789012:assumed-role/Lister/session-2';
    const page1 = await call({ method: 'GET', path: '/tasks', query: { limit: '2' }, caller: sameRole });
    expect(page1.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[4], ids[3]]);
    const page2 = await call({
      method: 'GET',
      path: '/tasks',
      query: { limit: '2', cursor: page1.body.nextCursor },
      caller,
    });
    expect(page2.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
    const fails = await call({
      method: 'GET',
      path: '/tasks',
      query: { type: 'demo.fail', status: 'QUEUED' },
      caller,
    });
    expect(fails.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[3], ids[1]]);
    expect(fails.body.nextCursor).toBeUndefined();
    expect((await call({ method: 'GET', path: '/tasks', query: { limit: '0' } })).status).toBe(400);
    expect(
      (await call({ method: 'GET', path: '/tasks', query: { status: 'DONE' } })).body.errors[0].field,
    ).toBe('status');
    expect((await call({ method: 'GET', path: '/tasks', query: { cursor: 'forged' } })).status).toBe(400);
  });

  it('POST /tasks/{id}/cancel: 200 CANCELLED, then 409; 404 for another caller', async () => {
    const id = (await call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo' } })).body.task
      .id as string;
    expect((await call({ method: 'POST', path: `/tasks/${id}/cancel`, caller: BOB })).status).toBe(404);
    const cancelled = await call({ method: 'POST', path: `/tasks/${id}/cancel` });
    expect([cancelled.status, cancelled.body.task.status]).toEqual([200, 'CANCELLED']);
    const again = await call({ method: 'POST', path: `/tasks/${id}/cancel` });
    expect([again.status, again.body.code, again.body.taskStatus]).toEqual([
      409,
      'TASK_STATE_CONFLICT',
      'CANCELLED',
    ]);

    // Retry (redrive) a cancelled task: back to QUEUED with a fresh budget; retrying a queued task is 409.
    const retried = await call({ method: 'POST', path: `/tasks/${id}/retry` });
    expect(retried.status).toBe(200);
    expect(retried.body.task).toMatchObject({ status: 'QUEUED', attempts: 0 });
    expect(retried.body.task.finishedAt).toBeUndefined();
    expect((await call({ method: 'POST', path: `/tasks/${id}/retry` })).status).toBe(409);
  });

  it('GET /health is 200; unknown routes are 404; a wrong method is 405 with Allow; a named stage is stripped', async () => {
    expect((await call({ method: 'GET', path: '/health', caller: null })).status).toBe(200);
    expect((await call({ method: 'GET', path: '/nothing' })).status).toBe(404);
    const wrong = await call({ method: 'DELETE', path: '/tasks' });
    expect([wrong.status, wrong.headers.allow]).toEqual([405, 'POST, GET']);
    expect((await call({ method: 'GET', path: '/prod/health', stage: 'prod' })).status).toBe(200);
  });
});

describe('schedules', () => {
  it('PUT creates (201) then replaces (200); GET, list, fires; DELETE is 204, then 404', async () => {
    const body = { expression: 'rate(1 hour)', task: { type: 'demo.echo', payload: { n: 1 } } };
    const created = await call({ method: 'PUT', path: '/schedules/hourly', body });
    expect([created.status, created.body.schedule.sync.state]).toEqual([201, 'LOCAL']);
    const replaced = await call({
      method: 'PUT',
      path: '/schedules/hourly',
      body: { ...body, enabled: false },
    });
    expect([replaced.status, replaced.body.schedule.enabled]).toEqual([200, false]);
    expect((await call({ method: 'GET', path: '/schedules/hourly' })).body.schedule.name).toBe('hourly');
    const page = await call({ method: 'GET', path: '/schedules', query: { limit: '10' } });
    expect(page.body.schedules.map((s: { name: string }) => s.name)).toEqual(['hourly']);
    const fires = await call({ method: 'GET', path: '/schedules/hourly/fires', query: { limit: '5' } });
    expect([fires.status, fires.body.fires]).toEqual([200, []]);
    expect(
      (await call({ method: 'PUT', path: '/schedules/x', body: { expression: 'rate(0 hours)' } })).status,
    ).toBe(400);
    expect((await call({ method: 'DELETE', path: '/schedules/hourly' })).status).toBe(204);
    expect((await call({ method: 'GET', path: '/schedules/hourly' })).status).toBe(404);
  });
});

describe('GET /openapi.json', () => {
  it('answers the generated document from its file, as the Lambda serves it (equal to what the schemas give)', async () => {
    const res = await call({ method: 'GET', path: '/openapi.json', caller: null });
    expect([res.status, res.headers['content-type']]).toEqual([200, 'application/json']);
    expect(res.body).toEqual(openApiDocument(API_ROUTES, taskDefinitions));
  });

  it('an unreadable file is a 500 that names it, logged; the rest of the API answers', async () => {
    const deps = { logger: silentLogger(), openApi: openApiFile('/nonexistent/openapi.json') };
    const res = await handleApiEvent(
      apiEvent({ method: 'GET', path: '/openapi.json', caller: null }),
      deps as unknown as ApiDeps,
    );
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'OPENAPI_FILE_UNREADABLE' });
    expect(JSON.parse(res.body).detail).not.toContain('/nonexistent');
  });
});

describe('fuzz', () => {
  it(
    '500 random requests: never a 5xx, and a refused request never writes',
    { timeout: 120_000 },
    async () => {
      const field = fc.constantFrom(
        'type',
        'payload',
        'priority',
        'delaySeconds',
        'runAt',
        'maxAttempts',
        'timeoutSeconds',
        'idempotencyKey',
        'owner',
        '__proto__',
        'constructor',
      );
      const value = fc.oneof(
        fc.jsonValue(),
        fc.constantFrom(
          'demo.echo',
          'demo.sleep',
          'demo.fail',
          '2030-01-01T00:00:00Z',
          -1,
          0,
          1.5,
          1e308,
          '',
          'x'.repeat(200),
        ),
      );
      const body = fc.oneof(
        fc.dictionary(field, value, { maxKeys: 6 }).map((o) => JSON.stringify(o)),
        fc
          .record(
            { type: fc.constantFrom('demo.echo', 'demo.sleep', 'demo.fail'), payload: fc.jsonValue() },
            { requiredKeys: ['type'] },
          )
          .map((o) => JSON.stringify(o)),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc.string(),
      );
      const spec = fc.record({
        method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT'),
        path: fc.constantFrom(
          '/tasks',
          '/tasks',
          '/tasks/x/cancel',
          '/tasks/%E0%A4%A/retry',
          '/tasks/../tasks',
        ),
        rawBody: body,
        contentType: fc.constantFrom(
          'application/json',
          'application/json',
          'text/plain',
          'application/problem+json',
          null,
        ),
      });
      let refused = 0;
      await fc.assert(
        fc.asyncProperty(spec, async (s) => {
          const before = await itemCount();
          const res = await call(s);
          expect(res.status).toBeLessThan(500);
          if (res.status >= 400) {
            refused++;
            expect(await itemCount()).toBe(before);
          }
        }),
        { numRuns: 500, seed: 20261130 },
      );
      expect(refused).toBeGreaterThan(100);
    },
  );
});

describe('OpenAPI conformance', () => {
  it('the exchanges above went to every documented operation but the batch, flow (children and steps too), stats and type ones (test/api-batch.test.ts, test/api-flows.test.ts, test/api-stats.test.ts, test/api-types.test.ts)', () => {
    const elsewhere = [
      'enqueueBatch',
      'createFlow',
      'getStats',
      'listTypes',
      'getTaskChildren',
      'getTaskSteps',
      'pauseType',
      'resumeType',
    ];
    expect(conformance.operationIds().filter((id) => !conformance.seen.has(id))).toEqual(elsewhere);
  });
});
