/**
 * Every write of the flow and step protocol × every way one answer can go wrong (the faults of
 * test/store-lost-answer-matrix.test.ts, test/support/fault-injection.ts): the count of a child's end on
 * its parent, the parent's readiness, a flow's puts (its root, a child), a handler's raise of its child
 * count and its children's puts, its wait, and a step's write. For each, the caller learns the truth (a
 * single fault never turns into an error) and nothing is done twice: a child counted once, a parent
 * readied once, a flow's tasks written once, a step stored once. On dynalite and DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { defineConfig } from '../shared/config.js';
import { idempotentTaskId } from '../shared/ids.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { documentClientFor } from '../shared/store/dynamo.js';
import { ensureTable } from '../shared/store/table-setup.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { TaskStore } from '../shared/store/task-store.js';
import { TaskStatus } from '../shared/task-model.js';
import { fastRetryStrategy, FaultInjector, type FaultKind } from './support/fault-injection.js';
import { ManualClock, sequentialIds } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

const FAULTS: FaultKind[] = [
  'lost-network',
  'lost-deadline',
  'deadline-before',
  'throttled',
  'server-error-before',
  'server-error-after',
];
const credentials = { accessKeyId: 'x', secretAccessKey: 'x' };

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

let tables = 0;
async function newWorld() {
  const config = defineConfig({
    tableName: `flows-faults-${process.pid}-${++tables}`,
    dynamodbEndpoint: server.endpoint,
    requestDeadlineMs: 9_000,
  });
  const client = new DynamoDBClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials,
    retryStrategy: fastRetryStrategy(3),
  });
  const faults = new FaultInjector(client);
  await ensureTable(client, config.tableName);
  const clock = new ManualClock();
  const store = new TaskStore({ doc: documentClientFor(client), config, clock, newId: sequentialIds('t') });
  const scan = async () => {
    const out = await store.ctx.doc.send(
      new ScanCommand({ TableName: config.tableName, ConsistentRead: true }),
    );
    return (out.Items ?? []) as Record<string, unknown>[];
  };
  const tasks = async () => (await scan()).filter((i) => i.sk === 'TASK') as unknown as TaskItem[];
  const claim = async (types: string[]) =>
    (await store.claim({ workerId: 'w', types, max: 20 }, new ClaimState())).claimed;
  return { store, faults, scan, tasks, claim, client };
}

const leaf = (n: number) => ({ task: { type: 'leaf', payload: { n } } });

describe.each(FAULTS)('flows under one %s', (fault) => {
  it('a child’s count and its parent’s readiness: counted once, readied once', async () => {
    for (const nth of [1, 2]) {
      // nth 1: the last child's count on its parent; nth 2: the readiness write after it.
      const w = await newWorld();
      const flow = await w.store.enqueueFlow({
        owner: 'o',
        root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
      });
      const [a, b] = await w.claim(['leaf']);
      await w.store.complete({ lease: a!.lease, result: 1 });
      const rule = w.faults.inject({ operation: 'UpdateItem', pk: `TASK#${flow.task.id}`, fault, nth });
      const done = await w.store.complete({ lease: b!.lease, result: 2 });
      expect(done.status).toBe(TaskStatus.SUCCESS);
      expect(rule.fired).toBe(1);
      const parent = (await w.tasks()).find((t) => t.id === flow.task.id)!;
      expect({
        status: parent.status,
        pending: parent.childrenPending,
        ended: [...parent.childrenEnded!].sort(),
      }).toEqual({
        status: TaskStatus.QUEUED,
        pending: 0,
        ended: [0, 1],
      });
      // Readied once: claimable once, at attempt 1.
      const claimed = await w.claim(['sum']);
      expect(claimed.map((c) => [c.task.id, c.lease.attempts])).toEqual([[flow.task.id, 1]]);
      w.client.destroy();
    }
  });

  it('a flow’s puts (its root, a child): every task written once, the answer the flow', async () => {
    for (const which of ['root', 'child'] as const) {
      const w = await newWorld();
      const rootId = idempotentTaskId('o', 'k');
      const rule = w.faults.inject({
        operation: 'PutItem',
        pk: which === 'root' ? `TASK#${rootId}` : /^TASK#child-/,
        fault,
      });
      const flow = await w.store.enqueueFlow({
        owner: 'o',
        idempotencyKey: 'k',
        root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
      });
      expect(rule.fired).toBe(1);
      expect(flow.created).toBe(true);
      expect(flow.task.id).toBe(rootId);
      const tasks = await w.tasks();
      expect(tasks.map((t) => t.id).sort()).toEqual([rootId, ...flow.ids.children!.map((c) => c.id)].sort());
      expect(tasks.find((t) => t.id === rootId)).toMatchObject({
        status: 'WAITING_CHILDREN',
        childrenPending: 2,
      });
      w.client.destroy();
    }
  });

  it('a handler’s raise, its children’s puts and its wait: each once; a step stored once', async () => {
    for (const write of ['raise', 'child put', 'wait', 'step'] as const) {
      const w = await newWorld();
      const { task } = await w.store.enqueue({ type: 'sum', owner: 'o', payload: null });
      const [p] = await w.claim(['sum']);
      const lease = p!.lease;
      const children = [{ type: 'leaf' }, { type: 'leaf' }];
      const onParent = { operation: 'UpdateItem' as const, pk: `TASK#${task.id}`, fault };
      if (write === 'raise') w.faults.inject(onParent);
      if (write === 'child put') w.faults.inject({ operation: 'PutItem', pk: /^TASK#child-/, fault, nth: 2 });
      const raised = await w.store.enqueueChildren({ lease, parentOwner: 'o', children, from: 0, known: 0 });
      if (write === 'wait') w.faults.inject(onParent);
      if (write === 'step') w.faults.inject(onParent);
      if (write === 'step') await w.store.writeStep(lease, 'charge', '{"id":1}');
      const waited = await w.store.waitForChildren({ lease, childCount: raised.count });
      expect(waited.status).toBe(TaskStatus.WAITING_CHILDREN);
      // The fault was met, by that write.
      expect(
        w.faults.log.filter((e) => e.fault === fault),
        write,
      ).toHaveLength(1);
      const tasks = await w.tasks();
      const parent = tasks.find((t) => t.id === task.id)!;
      expect({
        count: parent.childCount,
        pending: parent.childrenPending,
        attempts: parent.attempts,
      }).toEqual({
        count: 2,
        pending: 2,
        attempts: 0,
      });
      expect(
        tasks
          .filter((t) => t.parentId === task.id)
          .map((t) => t.id)
          .sort(),
      ).toEqual([...raised.ids].sort());
      if (write === 'step') {
        const steps = (await w.scan()).filter((i) => String(i.sk).startsWith('STEP#'));
        expect(steps.map((s) => [s.sk, s.result, s.token])).toEqual([
          ['STEP#charge', '{"id":1}', lease.token],
        ]);
      }
      w.client.destroy();
    }
  });
});
