/**
 * POST /tasks/batch against DynamoDB (dynalite by default) through the Lambda handler: each task is
 * answered on its own and as POST /tasks answers it, a bad envelope writes nothing, and the answer
 * for tasks sharing an idempotency key does not depend on timing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient, ThrottlingException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { BATCH_CONCURRENCY } from '../shared/api/batch-enqueue.js';
import { MAX_BATCH_TASKS } from '../shared/api/request-schemas.js';
import { batchAnswerSchema } from '../shared/api/response-schemas.js';
import { createLeasehold } from '../shared/app.js';
import { loadConfig } from '../shared/config.js';
import type { EnqueueResult } from '../shared/store/enqueue.js';
import type { EnqueueInput } from '../shared/task-inputs.js';
import { ensureTable } from '../shared/store/table-setup.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { apiEvent, BOB, type EventSpec } from './support/api-events.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

let server: TestDynamo;
let handler: (typeof import('../functions/api.js'))['handler'];
let doc: DynamoDBDocumentClient;
const table = `api-batch-${process.pid}`;

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

type Json = Record<string, any>;
const call = async (spec: EventSpec) => {
  const res = await handler(apiEvent(spec));
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) as Json };
};
const batch = (tasks: unknown, caller?: string) =>
  call({ method: 'POST', path: '/tasks/batch', body: { tasks }, ...(caller ? { caller } : {}) });
const single = (body: unknown) => call({ method: 'POST', path: '/tasks', body });
const itemCount = async () =>
  (await doc.send(new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }))).Count ?? 0;
const outcomes = (body: Json) => body.results.map((r: Json) => `${r.index}:${r.outcome}:${r.status}`);

/**
 * The API on the same table with its submitter wrapped (the batch's own dependency, not DynamoDB's):
 * `around` sees each task's input and decides whether, and when, the real enqueue runs.
 */
function batchWorld(
  around: (
    input: EnqueueInput,
    enqueue: (input: EnqueueInput) => Promise<EnqueueResult>,
  ) => Promise<EnqueueResult>,
) {
  const app = createLeasehold(loadConfig(process.env), taskDefinitions);
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const logged = vi.spyOn(logger, 'error');
  class WrappedSubmitter extends TaskSubmitter {
    override enqueue(input: EnqueueInput) {
      return around(input, (i) => super.enqueue(i));
    }
  }
  const deps = { ...app, submitter: new WrappedSubmitter(app.store, app.registry, app.config), logger };
  return {
    logged,
    send: async (tasks: unknown[]) => {
      const response = await handleApiEvent(
        apiEvent({ method: 'POST', path: '/tasks/batch', body: { tasks } }),
        deps,
      );
      return { status: response.statusCode, body: batchAnswerSchema.parse(JSON.parse(response.body)) };
    },
    close: () => app.doc.destroy(),
  };
}

describe('POST /tasks/batch: each task answered on its own', () => {
  it('a mixed batch: per-task answers in the order sent, each as POST /tasks answers it; only the valid task is written', async () => {
    const earlier = await single({ type: 'demo.echo', payload: { n: 1 }, idempotencyKey: 'mixed-1' });
    expect(earlier.status).toBe(201);
    const tasks = [
      { type: 'demo.echo', payload: { hello: 'batch' }, priority: 3 },
      { type: 'demo.sleep', payload: { ms: 'long' } },
      { type: 'nope' },
      { type: 'demo.echo', payload: { n: 1 }, idempotencyKey: 'mixed-1' },
      { type: 'demo.echo', payload: { n: 2 }, idempotencyKey: 'mixed-1' },
      42,
      { type: 'demo.echo', timeoutSeconds: 3600 },
    ];
    const before = await itemCount();
    const res = await batch(tasks);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    batchAnswerSchema.parse(res.body);
    expect(outcomes(res.body)).toEqual([
      '0:created:201',
      '1:failed:400',
      '2:failed:400',
      '3:existing:200',
      '4:failed:409',
      '5:failed:400',
      '6:failed:400',
    ]);
    expect([res.body.created, res.body.existing, res.body.failed]).toEqual([1, 1, 5]);
    const [created, badPayload, unknownType, repeat, conflict, notObject, longTimeout] = res.body
      .results as Json[];
    expect(created!.task).toMatchObject({ type: 'demo.echo', status: 'QUEUED', priority: 3 });
    expect(badPayload!.problem).toMatchObject({ code: 'VALIDATION_FAILED', status: 400 });
    expect(badPayload!.problem.errors.map((e: Json) => e.field)).toEqual(['payload.ms']);
    expect(unknownType!.problem.errors.map((e: Json) => e.field)).toEqual(['type']);
    expect(repeat!.task.id).toBe(earlier.body.task.id);
    expect(conflict!.problem).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', taskId: earlier.body.task.id });
    expect(notObject!.problem.errors.map((e: Json) => e.field)).toEqual(['body']);
    expect(longTimeout!.problem.errors.map((e: Json) => e.field)).toEqual(['timeoutSeconds']);
    // Exactly the one new task was written (its payload is small: one item).
    expect(await itemCount()).toBe(before + 1);
    expect((await call({ method: 'GET', path: `/tasks/${created!.task.id}` })).body.task.payload).toEqual({
      hello: 'batch',
    });

    // Each refused task's problem is the one POST /tasks answers for the same body, member for member.
    for (const index of [1, 2, 4, 5, 6]) {
      const alone = await single(tasks[index]);
      expect(alone.status, `task ${index}`).toBe(res.body.results[index].status);
      expect(alone.body, `task ${index}`).toEqual(res.body.results[index].problem);
    }
    expect(await itemCount()).toBe(before + 1);
  });

  it('a created task is answered with the task POST /tasks shows for it, and the other way round', async () => {
    const body = { type: 'demo.echo', payload: { shape: 1 }, idempotencyKey: 'shape-batch-first' };
    const fromBatch = (await batch([body])).body.results[0] as Json;
    const thenSingle = await single(body);
    expect([fromBatch.outcome, thenSingle.status]).toEqual(['created', 200]);
    expect(fromBatch.task).toEqual(thenSingle.body.task);

    const other = {
      type: 'demo.sleep',
      payload: { ms: 5 },
      delaySeconds: 60,
      idempotencyKey: 'shape-single',
    };
    const fromSingle = await single(other);
    const thenBatch = (await batch([other])).body.results[0] as Json;
    expect([fromSingle.status, thenBatch.outcome]).toEqual([201, 'existing']);
    expect(thenBatch.task).toEqual(fromSingle.body.task);

    // Without a key: the same members as POST /tasks gives a new task.
    const plain = { type: 'demo.echo', payload: { shape: 2 }, maxAttempts: 5 };
    const batched = (await batch([plain])).body.results[0].task as Json;
    const alone = (await single(plain)).body.task as Json;
    expect(Object.keys(batched).sort()).toEqual(Object.keys(alone).sort());
    const { id: _a, createdAt: _b, updatedAt: _c, availableAt: _d, ...same } = batched;
    expect(alone).toMatchObject(same);
  });

  it('a payload over 128 bytes is written with its own item, and read back whole', async () => {
    const payload = { text: 'x'.repeat(1_000) };
    const before = await itemCount();
    const res = await batch([
      { type: 'demo.echo', payload },
      { type: 'demo.echo', payload: 1 },
    ]);
    expect(outcomes(res.body)).toEqual(['0:created:201', '1:created:201']);
    expect(res.body.results[0].task.payloadBytes).toBe(JSON.stringify(payload).length);
    // Payload item and task item for the first, the task item alone for the second.
    expect(await itemCount()).toBe(before + 3);
    const read = await call({ method: 'GET', path: `/tasks/${res.body.results[0].task.id}` });
    expect(read.body.task.payload).toEqual(payload);
  });

  it(`takes ${MAX_BATCH_TASKS} tasks and answers them in order`, async () => {
    const before = await itemCount();
    const tasks = Array.from({ length: MAX_BATCH_TASKS }, (_, n) => ({ type: 'demo.echo', payload: { n } }));
    const res = await batch(tasks);
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(MAX_BATCH_TASKS);
    expect(res.body.results.map((r: Json) => [r.index, r.task.payload.n])).toEqual(
      tasks.map((_, n) => [n, n]),
    );
    expect(new Set(res.body.results.map((r: Json) => r.task.id)).size).toBe(MAX_BATCH_TASKS);
    expect(await itemCount()).toBe(before + MAX_BATCH_TASKS);
  });
});

describe('POST /tasks/batch: per-task idempotency', () => {
  it('a batch of one debounce key ends on its last payload (made in the order sent)', async () => {
    const tasks = Array.from({ length: 16 }, (_, i) => ({
      type: 'demo.echo',
      payload: { i },
      debounce: { key: 'batch-key', windowMs: 60_000 },
    }));
    const answer = await call({ method: 'POST', path: '/tasks/batch', body: { tasks } });
    expect(answer.status).toBe(200);
    const ids = new Set(answer.body.results.map((r: { task: { id: string } }) => r.task.id));
    expect(ids.size).toBe(1);
    const read = await call({ method: 'GET', path: `/tasks/${[...ids][0]}` });
    expect(read.body.task.payload).toEqual({ i: 15 });
  });

  it('the same batch sent again (a lost answer, retried) creates nothing: every task is existing, same ids', async () => {
    const tasks = Array.from({ length: 20 }, (_, n) => ({
      type: 'demo.echo',
      payload: { n, big: n % 5 === 0 ? 'y'.repeat(300) : undefined },
      idempotencyKey: `resend-${n}`,
    }));
    const first = await batch(tasks);
    expect(first.body.created).toBe(20);
    const before = await itemCount();
    const again = await batch(tasks);
    expect([again.body.created, again.body.existing, again.body.failed]).toEqual([0, 20, 0]);
    expect(again.body.results.map((r: Json) => r.task.id)).toEqual(
      first.body.results.map((r: Json) => r.task.id),
    );
    expect(await itemCount()).toBe(before);
    // The key is the caller's: another caller's same batch is new tasks of its own.
    expect((await batch(tasks, BOB)).body.created).toBe(20);
  });

  it('tasks sharing a key in one batch: the first creates, a same one is existing, another a conflict, however slow the first write', async () => {
    // The first write of each key is held back, as a slow DynamoDB answer would be: were the later
    // tasks of the key sent meanwhile, one of them would create the task and the answer would change.
    // (The unknown type is refused by the submitter without a write, so it is not held back.)
    const heldBack = new Set<string>();
    const world = batchWorld(async (input, enqueue) => {
      if (input.type === 'demo.echo' && input.idempotencyKey && !heldBack.has(input.idempotencyKey)) {
        heldBack.add(input.idempotencyKey);
        await new Promise((r) => setTimeout(r, 30));
      }
      return enqueue(input);
    });
    for (let round = 0; round < 3; round++) {
      const key = `twice-${round}`;
      const filler = Array.from({ length: round * 3 }, (_, n) => ({ type: 'demo.echo', payload: n }));
      const tasks = [
        ...filler,
        { type: 'nope', idempotencyKey: key },
        { type: 'demo.echo', payload: 'a', idempotencyKey: key },
        ...filler,
        { type: 'demo.echo', payload: 'a', idempotencyKey: key },
        { type: 'demo.echo', payload: 'b', idempotencyKey: key },
      ];
      const { body } = await world.send(tasks);
      const ofKey = body.results.filter((r) => (tasks[r.index] as Json).idempotencyKey === key) as Json[];
      expect(
        ofKey.map((r) => `${r.outcome}:${r.status}`),
        `round ${round}`,
      ).toEqual(['failed:400', 'created:201', 'existing:200', 'failed:409']);
      expect(ofKey[1]!.task.payload).toBe('a');
      expect(ofKey[2]!.task.id).toBe(ofKey[1]!.task.id);
      expect(ofKey[3]!.problem).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', taskId: ofKey[1]!.task.id });
    }
    world.close();
  });
  it(`enqueues at most ${BATCH_CONCURRENCY} tasks of a batch at once, and more than one`, async () => {
    let inFlight = 0;
    let most = 0;
    const world = batchWorld(async (input, enqueue) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 2));
      return enqueue(input).finally(() => inFlight--);
    });
    const tasks = Array.from({ length: 60 }, (_, n) => ({ type: 'demo.echo', payload: n }));
    expect((await world.send(tasks)).body.created).toBe(60);
    expect(most).toBe(BATCH_CONCURRENCY);
    world.close();
  });
});

describe('POST /tasks/batch: a bad envelope is refused whole and writes nothing', () => {
  it.each<[string, EventSpec, number, string]>([
    ['an empty array', { method: 'POST', path: '/tasks/batch', body: { tasks: [] } }, 400, 'tasks'],
    [
      `${MAX_BATCH_TASKS + 1} tasks`,
      {
        method: 'POST',
        path: '/tasks/batch',
        body: { tasks: Array.from({ length: MAX_BATCH_TASKS + 1 }, () => ({ type: 'demo.echo' })) },
      },
      400,
      'tasks',
    ],
    [
      'a body over 256 KB',
      {
        method: 'POST',
        path: '/tasks/batch',
        body: {
          tasks: Array.from({ length: 3 }, () => ({ type: 'demo.echo', payload: 'x'.repeat(90_000) })),
        },
      },
      413,
      'BODY_TOO_LARGE',
    ],
    [
      'an array, not an object',
      { method: 'POST', path: '/tasks/batch', body: [{ type: 'demo.echo' }] },
      400,
      'body',
    ],
    ['no tasks member', { method: 'POST', path: '/tasks/batch', body: { type: 'demo.echo' } }, 400, 'tasks'],
    [
      'tasks not an array',
      { method: 'POST', path: '/tasks/batch', body: { tasks: { type: 'demo.echo' } } },
      400,
      'tasks',
    ],
    [
      'a member besides tasks',
      { method: 'POST', path: '/tasks/batch', body: { tasks: [{ type: 'demo.echo' }], owner: 'x' } },
      400,
      'body',
    ],
    ['invalid JSON', { method: 'POST', path: '/tasks/batch', rawBody: '{"tasks": [' }, 400, 'INVALID_JSON'],
    [
      'a form body',
      {
        method: 'POST',
        path: '/tasks/batch',
        rawBody: 'tasks=1',
        contentType: 'application/x-www-form-urlencoded',
      },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'an unsigned request',
      { method: 'POST', path: '/tasks/batch', body: { tasks: [{ type: 'demo.echo' }] }, caller: null },
      401,
      'NO_CALLER_IDENTITY',
    ],
  ])('refuses %s with %i', async (_name, spec, status, mention) => {
    const before = await itemCount();
    const res = await call(spec);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(typeof res.body.detail).toBe('string');
    if (/^[A-Z_]+$/.test(mention)) expect(res.body.code).toBe(mention);
    else expect(res.body.errors.map((e: Json) => e.field)).toContain(mention);
    expect(await itemCount()).toBe(before);
  });

  it('GET /tasks/batch is a task id, as API Gateway routes it; DELETE is 405', async () => {
    expect((await call({ method: 'GET', path: '/tasks/batch' })).body.code).toBe('TASK_NOT_FOUND');
    const wrong = await call({ method: 'DELETE', path: '/tasks/batch' });
    expect([wrong.status, wrong.headers.allow]).toEqual([405, 'POST, GET']);
  });
});

describe('POST /tasks/batch: a task that fails on our side fails alone', () => {
  it('throttling is that task’s 503 THROTTLED, an unexpected error its 500 (logged); the others are created', async () => {
    // The real submitter on the real table, except for the tasks chosen to fail (by their key).
    const faults: Record<string, () => Error> = {
      throttled: () =>
        new ThrottlingException({
          message: 'Rate of requests exceeds the allowed throughput.',
          $metadata: {},
        }),
      broken: () => new TypeError('something unexpected'),
    };
    const world = batchWorld(async (input, enqueue) => {
      const fault = faults[input.idempotencyKey ?? ''];
      if (fault) throw fault();
      return enqueue(input);
    });
    const tasks = [
      { type: 'demo.echo', payload: 0 },
      { type: 'demo.echo', payload: 1, idempotencyKey: 'throttled' },
      { type: 'demo.echo', payload: 2, idempotencyKey: 'fault-ok' },
      { type: 'demo.echo', payload: 3, idempotencyKey: 'broken' },
    ];
    const before = await itemCount();
    const { status, body } = await world.send(tasks);
    expect(status).toBe(200);
    expect(outcomes(body)).toEqual(['0:created:201', '1:failed:503', '2:created:201', '3:failed:500']);
    expect(body.results[1]).toMatchObject({ problem: { code: 'THROTTLED', status: 503 } });
    expect(body.results[3]).toMatchObject({ problem: { code: 'INTERNAL_ERROR', status: 500 } });
    expect(world.logged).toHaveBeenCalledTimes(1);
    expect(await itemCount()).toBe(before + 2);
    world.close();
  });

  it('a batch whose every task fails is still answered 200, with every problem', async () => {
    const res = await batch([{ type: 'nope' }, { type: 'demo.fail', payload: {} }]);
    expect(res.status).toBe(200);
    expect([res.body.created, res.body.existing, res.body.failed]).toEqual([0, 0, 2]);
  });
});
