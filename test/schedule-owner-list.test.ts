/**
 * GET /schedules reads only the caller's definitions (the owner index), a page at a
 * time under Lambda's response limit; the local ticker reads every definition's timing but no payloads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { localSync } from '../shared/schedules/scheduler-sync.js';
import { ScheduleService } from '../shared/schedules/schedule-service.js';
import { definitionKey, isDefinitionPartition, ScheduleStore } from '../shared/schedules/schedule-store.js';
import { demoTasks } from '../tasks/demo.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { ALICE, BOB, apiEvent, type EventSpec } from './support/api-events.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { FAST_LEASES, silentLogger } from './support/worker-world.js';
import { fireTick } from './support/fire-tick.js';

const MALLORY = 'arn:aws:iam::123456789012:user/mallory';
/** What a synchronous Lambda invocation may return; API Gateway answers 500 to a larger result. */
const LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024;

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

async function world() {
  const t = await createTestStore(server.endpoint, FAST_LEASES);
  const submitter = new TaskSubmitter(t.store, new TaskRegistry(demoTasks, t.config), t.config);
  const schedules = new ScheduleService(new ScheduleStore(t.store.ctx), localSync, submitter, t.clock);
  /** Bytes of items DynamoDB sent back (Query and BatchGetItem answers), as the repro measured them. */
  let bytesRead = 0;
  t.client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const output = out.output as { Items?: unknown[]; Responses?: Record<string, unknown[]> };
      bytesRead += JSON.stringify(output.Items ?? []).length + JSON.stringify(output.Responses ?? {}).length;
      return out;
    },
    { step: 'deserialize', name: 'testCountBytes', priority: 'high' },
  );
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
      bytes: Buffer.byteLength(JSON.stringify(res)),
      body: (res.body ? JSON.parse(res.body) : {}) as Record<string, any>,
    };
  };
  const measure = async <T>(f: () => Promise<T>) => {
    bytesRead = 0;
    const value = await f();
    return { value, bytesRead };
  };
  const put = (caller: string, name: string, payload: unknown = null) =>
    call({
      caller,
      method: 'PUT',
      path: `/schedules/${name}`,
      body: { expression: 'rate(1 day)', task: { type: 'demo.echo', payload } },
    });
  return { ...t, schedules, call, measure, put };
}

const names = (body: Record<string, any>) => (body.schedules as { name: string }[]).map((s) => s.name);

describe('GET /schedules reads only the caller’s schedules', () => {
  it('bob’s and alice’s lists read none of mallory’s large definitions; the ticker reads no payloads', async () => {
    const w = await world();
    const big = 'x'.repeat(200_000);
    for (let i = 0; i < 8; i++) expect((await w.put(MALLORY, `m${i}`, big)).status).toBe(201);
    await w.put(ALICE, 'alice-a', { n: 1 });
    await w.put(ALICE, 'alice-b', { n: 2 });

    const bob = await w.measure(() => w.call({ caller: BOB, method: 'GET', path: '/schedules' }));
    expect([bob.value.status, bob.value.body]).toEqual([200, { schedules: [] }]);
    expect(bob.bytesRead).toBeLessThan(1_000);
    const alice = await w.measure(() => w.call({ caller: ALICE, method: 'GET', path: '/schedules' }));
    expect(names(alice.value.body)).toEqual(['alice-a', 'alice-b']);
    expect(alice.bytesRead).toBeLessThan(5_000);
    // 1.6 MB of mallory's payloads in the table; the ticker's look at every definition reads a few KB.
    const ticker = await w.measure(() => w.schedules.dueTicks(w.clock.now(), w.clock.now() + 86_400_000));
    expect(ticker.value).toHaveLength(10);
    expect(ticker.bytesRead).toBeLessThan(10_000);
    // Mallory's own list holds her schedules in full (a page may end early: follow the cursor).
    const mallory: Record<string, any>[] = [];
    let cursor: string | undefined;
    do {
      const page = await w.call({
        caller: MALLORY,
        method: 'GET',
        path: '/schedules',
        query: cursor ? { cursor } : {},
      });
      mallory.push(...page.body.schedules);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(mallory.map((m) => m.name)).toEqual(Array.from({ length: 8 }, (_, i) => `m${i}`));
    expect(mallory[0]!.task.payload).toBe(big);
  });

  it('pages by name with limit and nextCursor; every schedule once, in name order', async () => {
    const w = await world();
    for (const name of ['e', 'c', 'a', 'd', 'b']) await w.put(ALICE, name);
    await w.put(BOB, 'bb');
    const seen: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await w.call({
        method: 'GET',
        path: '/schedules',
        query: { limit: '2', ...(cursor ? { cursor } : {}) },
      });
      expect(page.status).toBe(200);
      seen.push(names(page.body));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.flat()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(seen[0]).toEqual(['a', 'b']);
    // Another caller's cursor is refused (it names alice's partition).
    const first = await w.call({ method: 'GET', path: '/schedules', query: { limit: '2' } });
    expect(
      (
        await w.call({
          caller: BOB,
          method: 'GET',
          path: '/schedules',
          query: { cursor: first.body.nextCursor },
        })
      ).status,
    ).toBe(400);
    expect((await w.call({ method: 'GET', path: '/schedules', query: { limit: '101' } })).status).toBe(400);
  });

  it('a deleted schedule leaves the list; a name deleted and created by another owner moves to that owner’s list', async () => {
    const w = await world();
    await w.put(ALICE, 'moving');
    expect((await w.call({ method: 'DELETE', path: '/schedules/moving' })).status).toBe(204);
    await w.put(BOB, 'moving');
    expect(names((await w.call({ method: 'GET', path: '/schedules' })).body)).toEqual([]);
    expect(names((await w.call({ caller: BOB, method: 'GET', path: '/schedules' })).body)).toEqual([
      'moving',
    ]);
  });

  it(
    'a page of large definitions ends before Lambda’s 6 MB response limit, and the pages hold every one',
    { timeout: 30_000 },
    async () => {
      const w = await world();
      const big = 'y'.repeat(240_000);
      const all = Array.from({ length: 22 }, (_, i) => `big-${String(i).padStart(2, '0')}`);
      for (const name of all) expect((await w.put(ALICE, name, big)).status).toBe(201);
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await w.call({ method: 'GET', path: '/schedules', query: cursor ? { cursor } : {} });
        expect(page.status).toBe(200);
        expect(page.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
        pages.push(names(page.body));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(pages.length).toBeGreaterThan(1);
      expect(pages.flat()).toEqual(all);
    },
  );
});

describe('definitions over several partitions', () => {
  it('definitions spread over the definitions partitions; each fire reads its own, the ticker and the list see every one', async () => {
    const w = await world();
    const all = Array.from({ length: 24 }, (_, i) => `nightly-${i}`);
    for (const name of all) expect((await w.put(ALICE, name, { name })).status).toBe(201);
    const items = (await w.scanAll()).filter((i) => String(i.pk).startsWith('SCHEDULES'));
    // Every definition at its name's key, and more than one partition in use (it was one, `SCHEDULES`).
    expect(items.map((i) => [i.pk, i.sk]).sort()).toEqual(
      all.map((name) => [definitionKey(ALICE, name).pk, `${ALICE}\u0000${name}`]).sort(),
    );
    expect(new Set(items.map((i) => i.pk)).size).toBeGreaterThan(1);
    expect(items.every((i) => isDefinitionPartition(String(i.pk)))).toBe(true);

    // A fire reads exactly its definition's key, consistently.
    const gets: unknown[] = [];
    w.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetCommand' || context.commandName === 'GetItemCommand')
          gets.push((args.input as { Key?: unknown }).Key);
        return next(args);
      },
      { step: 'initialize', name: 'testRecordGets' },
    );
    const outcome = await fireTick(w.schedules, ALICE, 'nightly-7', w.clock.now());
    expect(outcome).toMatchObject({ fired: true, created: true });
    expect(JSON.stringify(gets)).toContain(definitionKey(ALICE, 'nightly-7').pk);

    // The ticker reads every partition; the list pages over the owner index.
    const timings = await new ScheduleStore(w.store.ctx).timings();
    expect(timings.map((t) => t.name)).toEqual([...all].sort());
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await w.schedules.list(ALICE, { limit: 5, cursor });
      listed.push(...page.schedules.map((s) => s.name));
      cursor = page.nextCursor;
    } while (cursor);
    expect(listed).toEqual([...all].sort());
  });
});
