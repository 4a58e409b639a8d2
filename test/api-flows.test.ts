/**
 * POST /flows through the API handler on the request-only store (the API Lambda's), on dynalite: a
 * flow is written whole, its parents WAITING_CHILDREN and its leaves QUEUED, each child showing its
 * parent; its idempotency key answers the same ids again; a refused task anywhere in it is named by
 * its path in the body and nothing is written; the limits are refused with the limit in the message;
 * no body gives a 5xx. GET /tasks/{id}/children and /steps show a parent's children with their
 * statuses, results and errors, and a task's stored steps, to their owner only. Every exchange is
 * checked against the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { withinBudget } from '../shared/api/children-steps-json.js';
import { MAX_FLOW_DEPTH, MAX_FLOW_TASKS } from '../shared/flow-rules.js';
import { ALICE, BOB } from './support/api-events.js';
import { conformance, createApiWorld } from './support/api-world.js';
import { WRITE_OPERATIONS } from './support/request-meter.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

let server: TestDynamo;
let w: Awaited<ReturnType<typeof createApiWorld>>;
beforeAll(async () => {
  server = await startTestDynamo();
  w = await createApiWorld(server.endpoint);
});
afterAll(() => server.close());

type Json = Record<string, any>;
const postFlow = (body: unknown, caller = ALICE) => w.call({ method: 'POST', path: '/flows', body, caller });
const getTask = async (id: string, caller = ALICE) =>
  (await w.call({ method: 'GET', path: `/tasks/${id}`, caller })).body.task as Json;
const listed = async (caller: string) =>
  ((await w.call({ method: 'GET', path: '/tasks', caller })).body.tasks as Json[]).map((t) => t.id);
const writes = () => w.meter.count(...WRITE_OPERATIONS);
const iso = (ms: number) => new Date(ms).toISOString();

const echo = (n: number, extra: Json = {}) => ({ type: 'demo.echo', payload: { n }, ...extra });

/** A root demo.sum with two echo children (the second optional) and a nested sum with one echo child. */
const sample = {
  task: { type: 'demo.sum', payload: null, priority: 3 },
  children: [
    echo(1),
    echo(2, { optional: true, maxAttempts: 5 }),
    { task: { type: 'demo.sum' }, children: [echo(3, { timeoutSeconds: 30 })] },
  ],
};

describe('POST /flows', () => {
  it('writes the flow: 201 with the ids tree, the root WAITING_CHILDREN, each child with its parent', async () => {
    const res = await postFlow(sample);
    expect(res.status).toBe(201);
    const { id, ids, task } = res.body;
    expect(task).toMatchObject({
      id,
      type: 'demo.sum',
      status: 'WAITING_CHILDREN',
      priority: 3,
      children: { total: 3, pending: 3 },
    });
    expect(task).not.toHaveProperty('parentId');
    expect(ids).toEqual({
      id,
      children: [
        { id: expect.any(String) },
        { id: expect.any(String) },
        { id: expect.any(String), children: [{ id: expect.any(String) }] },
      ],
    });
    const [first, second, nested] = ids.children as Json[];
    const grandchild = nested!.children[0].id as string;
    expect(new Set([id, first!.id, second!.id, nested!.id, grandchild]).size).toBe(5);

    // GET /tasks/{id} shows each task's place in the flow.
    expect(await getTask(id)).toMatchObject({
      status: 'WAITING_CHILDREN',
      children: { total: 3, pending: 3 },
    });
    expect(await getTask(first!.id)).toMatchObject({
      type: 'demo.echo',
      status: 'QUEUED',
      parentId: id,
      payload: { n: 1 },
    });
    const optional = await getTask(second!.id);
    expect(optional).toMatchObject({ status: 'QUEUED', parentId: id, optional: true, maxAttempts: 5 });
    expect(await getTask(first!.id)).not.toHaveProperty('optional');
    expect(await getTask(nested!.id)).toMatchObject({
      type: 'demo.sum',
      status: 'WAITING_CHILDREN',
      parentId: id,
      children: { total: 1, pending: 1 },
    });
    expect(await getTask(grandchild)).toMatchObject({
      status: 'QUEUED',
      parentId: nested!.id,
      payload: { n: 3 },
    });
    // All five are the caller's, and no one else's.
    expect(
      (await listed(ALICE)).filter((t) => [id, first!.id, second!.id, nested!.id, grandchild].includes(t)),
    ).toHaveLength(5);
    expect(await listed(BOB)).toEqual([]);
    expect((await w.call({ method: 'GET', path: `/tasks/${id}`, caller: BOB })).status).toBe(404);
  });

  it('an idempotent repeat answers 200 with the same ids and adds no task; another flow under the key is a 409', async () => {
    const body = { ...sample, idempotencyKey: 'flow-17' };
    const first = await postFlow(body);
    expect(first.status).toBe(201);
    const items = (await w.scanAll()).length;
    const again = await postFlow(body);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.ids).toEqual(first.body.ids);
    expect(again.body.task).toMatchObject({ id: first.body.id, status: 'WAITING_CHILDREN' });
    // Its puts were refused: every task is there from the first send.
    expect((await w.scanAll()).length).toBe(items);

    const other = await postFlow({ ...body, children: [echo(9)] });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', taskId: first.body.id });
    // The key is the caller's: another caller's flow under it is its own.
    const bobs = await postFlow(body, BOB);
    expect(bobs.status).toBe(201);
    expect(bobs.body.id).not.toBe(first.body.id);
  });

  it('takes a flow nested to the depth limit', async () => {
    let node: Json = echo(0);
    for (let level = MAX_FLOW_DEPTH - 1; level >= 1; level--)
      node = { task: { type: 'demo.sum' }, children: [node] };
    const res = await postFlow({ task: { type: 'demo.sum' }, children: [node] });
    expect(res.status).toBe(201);
    let ids = res.body.ids as Json;
    let depth = 0;
    while (ids.children) [ids, depth] = [ids.children[0], depth + 1];
    expect(depth).toBe(MAX_FLOW_DEPTH);
  });
});

describe('POST /flows refused: the child and field named, nothing written', () => {
  const REFUSED = 'arn:aws:iam::123456789012:user/refused';
  const cases: [string, unknown, string, RegExp?][] = [
    [
      'a nested flow’s task with a payload its type refuses',
      {
        task: { type: 'demo.sum' },
        children: [echo(1), { task: { type: 'demo.sum', payload: { spawn: 'x' } }, children: [echo(2)] }],
      },
      'children.1.task.payload.spawn',
    ],
    [
      'a child task with a payload its type refuses, deep in the flow',
      {
        task: { type: 'demo.sum' },
        children: [
          {
            task: { type: 'demo.sum' },
            children: [echo(1), { type: 'demo.sleep', payload: { ms: 'soon' } }],
          },
        ],
      },
      'children.0.children.1.payload.ms',
    ],
    [
      'a child with a missing payload its type needs (checked as null)',
      { task: { type: 'demo.sum' }, children: [echo(1), echo(2), { type: 'demo.sleep' }] },
      'children.2.payload',
    ],
    [
      'an unknown type',
      { task: { type: 'demo.sum' }, children: [echo(1), echo(2), { type: 'demo.nope', payload: {} }] },
      'children.2.type',
      /unknown task type "demo\.nope"/,
    ],
    ['an unknown root type', { task: { type: 'nope' }, children: [echo(1)] }, 'task.type'],
    [
      'a fractional priority in a nested child',
      {
        task: { type: 'demo.sum' },
        children: [{ task: { type: 'demo.sum' }, children: [echo(1, { priority: 0.5 })] }],
      },
      'children.0.children.0.priority',
    ],
    [
      'a delay on a child task',
      { task: { type: 'demo.sum' }, children: [echo(1), echo(2, { delaySeconds: 5 })] },
      'children.1.delaySeconds',
      /a child is due at once/,
    ],
    [
      'runAt on the root task',
      { task: { type: 'demo.sum', runAt: '2030-01-01T00:00:00Z' }, children: [echo(1)] },
      'task.runAt',
    ],
    [
      'an idempotency key on a child task',
      { task: { type: 'demo.sum' }, children: [echo(1, { idempotencyKey: 'k' })] },
      'children.0.idempotencyKey',
      /give the flow one idempotencyKey/,
    ],
    [
      'a debounce on a nested flow’s task',
      {
        task: { type: 'demo.sum' },
        children: [{ task: { type: 'demo.sum', debounce: { key: 'k', windowMs: 10 } }, children: [echo(1)] }],
      },
      'children.0.task.debounce',
    ],
    [
      'optional on the root',
      { task: { type: 'demo.sum', optional: true }, children: [echo(1)] },
      'task.optional',
    ],
    [
      'a timeout over the maximum execution time',
      { task: { type: 'demo.sum' }, children: [echo(1, { timeoutSeconds: 100_000 })] },
      'children.0.timeoutSeconds',
      /maximum execution time/,
    ],
    [
      'a timeout over its type’s',
      {
        task: { type: 'demo.sum' },
        children: [{ type: 'demo.report', payload: { ms: 1 }, timeoutSeconds: 250 }],
      },
      'children.0.timeoutMs',
      /the timeout of task type demo\.report/,
    ],
    ['no children', { task: { type: 'demo.sum' }, children: [] }, 'children'],
    [
      'a nested flow without children',
      { task: { type: 'demo.sum' }, children: [{ task: echo(1), children: [] }] },
      'children.0.children',
    ],
    [
      'a child that is no object',
      { task: { type: 'demo.sum' }, children: [echo(1), 'demo.echo'] },
      'children.1',
      /a task .* or a flow/,
    ],
    ['no root task', { children: [echo(1)] }, 'task'],
    ['the root as a task', { type: 'demo.sum', children: [echo(1)] }, 'type'],
  ];

  it.each(cases)('%s: 400 naming %s', async (_name, body, field, message) => {
    const before = writes();
    const res = await postFlow(body, REFUSED);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    const problem = (res.body.errors as { field: string; message: string }[]).find((e) => e.field === field);
    expect(problem, JSON.stringify(res.body.errors)).toBeDefined();
    if (message) expect(problem!.message).toMatch(message);
    expect(writes()).toBe(before);
    expect(await listed(REFUSED)).toEqual([]);
  });

  it(`more than ${MAX_FLOW_TASKS} tasks below the root: 400 saying the limit, nothing written`, async () => {
    const before = writes();
    const body = {
      task: { type: 'demo.sum' },
      children: Array.from({ length: MAX_FLOW_TASKS + 1 }, (_, i) => echo(i)),
    };
    const res = await postFlow(body, REFUSED);
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(
      `holds ${MAX_FLOW_TASKS + 1} tasks below its root; a flow may hold at most ${MAX_FLOW_TASKS}`,
    );
    expect(res.body.errors).toEqual([
      { field: 'children', message: expect.stringContaining(`at most ${MAX_FLOW_TASKS}`) },
    ]);
    expect(writes()).toBe(before);
    expect(await listed(REFUSED)).toEqual([]);
  });

  it(`more than ${MAX_FLOW_DEPTH} levels of children: 400 saying the limit, nothing written`, async () => {
    let node: Json = echo(0);
    for (let level = MAX_FLOW_DEPTH; level >= 1; level--)
      node = { task: { type: 'demo.sum' }, children: [node] };
    const before = writes();
    const res = await postFlow({ task: { type: 'demo.sum' }, children: [node] }, REFUSED);
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(
      `nests ${MAX_FLOW_DEPTH + 1} levels of children; a flow may nest at most ${MAX_FLOW_DEPTH}`,
    );
    // A body nested far deeper than any flow is refused the same way (no recursion down it).
    const levels = 3_000;
    const open = '{"task":{"type":"demo.sum"},"children":['.repeat(levels);
    const deepRes = await w.call({
      method: 'POST',
      path: '/flows',
      rawBody: `${open}{"type":"demo.echo"}${']}'.repeat(levels)}`,
      caller: REFUSED,
    });
    expect(deepRes.status).toBe(400);
    expect(deepRes.body.detail).toContain(`a flow may nest at most ${MAX_FLOW_DEPTH}`);
    expect(writes()).toBe(before);
    expect(await listed(REFUSED)).toEqual([]);
  });

  it('lists at most 100 problems of a flow whose every task is refused, and counts the rest', async () => {
    const body = {
      task: { type: 'demo.sum' },
      children: Array.from({ length: 150 }, () => ({ type: 'demo.sleep', payload: { ms: 'soon' } })),
    };
    const res = await postFlow(body, REFUSED);
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(101);
    expect(res.body.errors[0]).toMatchObject({ field: 'children.0.payload.ms' });
    expect(res.body.errors[100]).toEqual({ field: 'children', message: expect.stringContaining('50 more') });
  });

  it('not JSON, or not sent as JSON: 400 and 415', async () => {
    expect(
      (await w.call({ method: 'POST', path: '/flows', rawBody: '{"task":', caller: REFUSED })).status,
    ).toBe(400);
    const text = await w.call({
      method: 'POST',
      path: '/flows',
      rawBody: JSON.stringify(sample),
      contentType: 'text/plain',
      caller: REFUSED,
    });
    expect(text.status).toBe(415);
    expect(await listed(REFUSED)).toEqual([]);
  });

  it('no body gives a 5xx, and a refused one writes nothing', async () => {
    const task = fc.record(
      {
        type: fc.constantFrom('demo.echo', 'demo.sum', 'demo.sleep', 'nope', ''),
        payload: fc.oneof(fc.constant(null), fc.jsonValue({ maxDepth: 2 }), fc.record({ ms: fc.integer() })),
        priority: fc.oneof(fc.integer({ min: -2000, max: 2000 }), fc.double()),
        timeoutSeconds: fc.integer({ min: -1, max: 1_000 }),
        optional: fc.boolean(),
        delaySeconds: fc.nat(),
      },
      { requiredKeys: [] },
    );
    const { node } = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        task,
        fc.record({ task, children: fc.array(tie('node'), { maxLength: 3 }) }),
        fc.jsonValue({ maxDepth: 2 }),
      ),
    }));
    const body = fc.record(
      {
        task,
        children: fc.oneof(fc.array(node, { maxLength: 4 }), fc.jsonValue({ maxDepth: 1 })),
        idempotencyKey: fc.string({ maxLength: 3 }),
        owner: fc.string(),
      },
      { requiredKeys: ['task', 'children'] },
    );
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = writes();
        const res = await postFlow(b, REFUSED);
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) {
          refused++;
          expect(writes()).toBe(before);
        }
      }),
      { numRuns: 200, seed: 20261130 },
    );
    expect(refused).toBeGreaterThan(50);
  });
});

describe('GET /tasks/{id}/children and GET /tasks/{id}/steps', () => {
  // A table of their own: the claims below take every due task of a type.
  let f: Awaited<ReturnType<typeof createApiWorld>>;
  beforeAll(async () => {
    f = await createApiWorld(server.endpoint);
  });
  const post = (body: unknown) => f.call({ method: 'POST', path: '/flows', body });
  const childrenOf = (id: string, caller = ALICE) =>
    f.call({ method: 'GET', path: `/tasks/${id}/children`, caller });
  const stepsOf = (id: string, caller = ALICE) =>
    f.call({ method: 'GET', path: `/tasks/${id}/steps`, caller });

  it('lists a parent’s children in order, with their statuses, and results and errors once they end', async () => {
    const res = await post({
      task: { type: 'demo.sum' },
      children: [
        echo(1),
        echo(2, { optional: true, maxAttempts: 1 }),
        { task: { type: 'demo.sum' }, children: [echo(3)] },
        echo(4),
      ],
    });
    const { id, ids } = res.body;
    const [one, two, nested, four] = (ids.children as Json[]).map((c) => c.id as string);
    expect((await childrenOf(id)).body).toEqual({
      children: [
        { id: one, type: 'demo.echo', status: 'QUEUED' },
        { id: two, type: 'demo.echo', status: 'QUEUED', optional: true },
        { id: nested, type: 'demo.sum', status: 'WAITING_CHILDREN' },
        { id: four, type: 'demo.echo', status: 'QUEUED' },
      ],
    });

    // One ends with a result, one fails for good, one is running.
    const { claimed } = await f.app.store.claim({ workerId: 'w1', types: ['demo.echo'], max: 10 });
    const lease = (childId: string) => claimed.find((c) => c.task.id === childId)!.lease;
    await f.app.store.complete({ lease: lease(one!), result: { n: 1 } });
    await f.app.store.fail({ lease: lease(two!), error: 'Error: boom' });
    const res2 = await childrenOf(id);
    expect(res2.status).toBe(200);
    expect(res2.body.children).toEqual([
      { id: one, type: 'demo.echo', status: 'SUCCESS', result: { n: 1 } },
      { id: two, type: 'demo.echo', status: 'FAILED', optional: true, error: 'Error: boom' },
      { id: nested, type: 'demo.sum', status: 'WAITING_CHILDREN' },
      { id: four, type: 'demo.echo', status: 'RUNNING' },
    ]);
    expect((await f.call({ method: 'GET', path: `/tasks/${id}` })).body.task).toMatchObject({
      children: { total: 4, pending: 2 },
    });
    // The nested parent's own child; a leaf has none.
    expect((await childrenOf(nested!)).body.children).toEqual([
      { id: expect.any(String), type: 'demo.echo', status: 'RUNNING' },
    ]);
    expect(await childrenOf(one!)).toEqual({ status: 200, body: { children: [] } });
  });

  it('answers 404 for another caller’s task, an unknown id, and 400 for a bad id', async () => {
    const { id } = (await post({ task: { type: 'demo.sum' }, children: [echo(1)] })).body;
    for (const path of [`/tasks/${id}/children`, `/tasks/${id}/steps`]) {
      const bobs = await f.call({ method: 'GET', path, caller: BOB });
      expect(bobs.status).toBe(404);
      expect(bobs.body).toMatchObject({ code: 'TASK_NOT_FOUND' });
      expect((await f.call({ method: 'GET', path: path.replace(id, 'no-such-task') })).status).toBe(404);
      expect((await f.call({ method: 'GET', path: path.replace(id, 'bad%20id') })).status).toBe(400);
      // GET only: a POST names the method allowed.
      const post = await f.call({ method: 'POST', path, body: {} });
      expect(post.status).toBe(405);
    }
    expect((await childrenOf(id)).body.children).toHaveLength(1);
  });

  it('lists the steps a task stored, oldest first, results parsed and times in ISO-8601; none before any', async () => {
    const created = await f.call({
      method: 'POST',
      path: '/tasks',
      body: { type: 'demo.steps', payload: { failOnceAfter: 'b' } },
    });
    const id = created.body.task.id as string;
    expect(await stepsOf(id)).toEqual({ status: 200, body: { steps: [] } });

    const { claimed } = await f.app.store.claim({ workerId: 'w1', types: ['demo.steps'], max: 10 });
    const { lease } = claimed.find((c) => c.task.id === id)!;
    const first = f.clock.now();
    await f.app.store.writeStep(lease, 'b', JSON.stringify({ step: 'b', attempt: 1 }));
    f.clock.advance(1_000);
    await f.app.store.writeStep(lease, 'a', JSON.stringify(['x', null]));
    f.clock.advance(1_000);
    await f.app.store.writeStep(lease, 'c', 'null');
    // A step of an earlier task of the same id (its record expired) is not this task's.
    await f.app.store.writeStep({ ...lease, createdAt: lease.createdAt - 1 }, 'old', '"old"');

    const res = await stepsOf(id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      steps: [
        { name: 'b', result: { step: 'b', attempt: 1 }, token: lease.token, storedAt: iso(first) },
        { name: 'a', result: ['x', null], token: lease.token, storedAt: iso(first + 1_000) },
        { name: 'c', result: null, token: lease.token, storedAt: iso(first + 2_000) },
      ],
    });
    expect((await stepsOf(id, BOB)).status).toBe(404);
  });

  it('leaves results out past 5 MB of answer, saying so, and keeps every entry', () => {
    const big = 'x'.repeat(1024 * 1024);
    const entries = Array.from({ length: 8 }, (_, i) => ({ name: `s${i}`, result: big }));
    const kept = withinBudget(entries);
    expect(kept.map((e) => e.name)).toEqual(entries.map((e) => e.name));
    expect(kept.filter((e) => 'result' in e)).toHaveLength(4);
    expect(kept.slice(4).every((e) => e.resultOmitted === true && !('result' in e))).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(JSON.stringify(kept)))).toBeLessThan(5 * 1024 * 1024 + 1024);
    // A small result after a large one left out still fits, and is kept.
    const mixed = withinBudget([...entries, { name: 'small', result: 1 }]);
    expect(mixed.at(-1)).toEqual({ name: 'small', result: 1 });
    // A child without a result is never marked.
    expect(withinBudget<{ id: string; result?: unknown }>([{ id: 'c' }], 0)).toEqual([{ id: 'c' }]);
  });
});

describe('the route', () => {
  it('is POST only (GET /flows is a 405 naming POST), and is among the routes the infrastructure creates', async () => {
    expect(API_ROUTES).toContainEqual({ method: 'POST', path: '/flows' });
    const res = await w.call({ method: 'GET', path: '/flows' });
    expect(res.status).toBe(405);
  });

  it('went through the documented operations', () => {
    for (const operation of ['createFlow', 'getTaskChildren', 'getTaskSteps'])
      expect(conformance.seen.has(operation), operation).toBe(true);
  });
});
