/**
 * Flows (shared/store/flow-enqueue.ts, child-ends.ts, children.ts) on a store with a manual clock, on
 * dynalite in `npm test` and on DynamoDB Local in `test:dynamodb-local`: a flow is written parents first
 * and whole or not at all; a parent waits in WAITING_CHILDREN, out of every claim index, until each
 * child's end is counted once; it then becomes QUEUED (or FAILED by a child that is not optional); a
 * count left undone by a dead writer is made by recovery's look; a cancel reaches the children; a
 * handler's own children (enqueueChildren, waitForChildren) and its retried attempt meet the same ids.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../shared/errors.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { conditionalUpdate } from '../shared/store/conditional-write.js';
import { writeTargetOf } from '../shared/store/context.js';
import { countChildEnd } from '../shared/store/child-ends.js';
import { asUpdate } from '../shared/store/transitions.js';
import { childCounted } from '../shared/store/flow-transitions.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { childTaskId } from '../shared/ids.js';
import { taskKey } from '../shared/table-layout.js';
import { TaskStatus } from '../shared/task-model.js';
import type { Claimed } from '../shared/store/claim-write.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { ManualClock } from './support/manual-clock.js';
import { readChildren } from '../shared/store/children-reads.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const leaf = (n: number, extra: Record<string, unknown> = {}) => ({
  task: { type: 'leaf', payload: { n }, ...extra },
});

async function claimAll(s: TestStore, types = ['leaf', 'sum']): Promise<Claimed[]> {
  return (await s.store.claim({ workerId: 'w', types, max: 50 }, new ClaimState())).claimed;
}

const item = async (s: TestStore, id: string) =>
  (await s.scanAll()).find((i) => i.pk === taskKey(id).pk && i.sk === 'TASK') as TaskItem | undefined;

describe('flows from the store (dynalite or DynamoDB Local)', () => {
  it('a parent waits out of every claim index, and runs once after its last child ends, with their results', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2), leaf(3)] },
    });
    expect(flow.created).toBe(true);
    const ids = flow.ids.children!.map((c) => c.id);
    expect(ids).toEqual([0, 1, 2].map((i) => childTaskId(flow.task.id, i)));
    expect(flow.task.status).toBe(TaskStatus.WAITING_CHILDREN);
    expect(flow.task.children).toEqual({ total: 3, pending: 3 });
    const parentItem = await item(s, flow.task.id);
    expect(parentItem).not.toHaveProperty('readyPk');
    expect(parentItem).not.toHaveProperty('delayPk');

    // Only the children are claimable; the parent stays waiting until the last one ends.
    const first = await claimAll(s);
    expect(first.map((c) => c.task.id).sort()).toEqual([...ids].sort());
    expect(first.every((c) => c.task.parentId === flow.task.id)).toBe(true);
    const resultOf = new Map(first.map((c, i) => [c.task.id, { n: i }]));
    for (const c of first.slice(0, 2))
      await s.store.complete({ lease: c.lease, result: resultOf.get(c.task.id) });
    expect((await s.store.get({ id: flow.task.id })).status).toBe(TaskStatus.WAITING_CHILDREN);
    expect((await s.store.get({ id: flow.task.id })).children).toEqual({ total: 3, pending: 1 });
    expect(await claimAll(s)).toEqual([]);
    await s.store.complete({ lease: first[2]!.lease, result: resultOf.get(first[2]!.task.id) });
    const parent = await s.store.get({ id: flow.task.id });
    expect(parent.status).toBe(TaskStatus.QUEUED);
    expect(parent.children).toEqual({ total: 3, pending: 0 });

    const [claimedParent] = await claimAll(s);
    expect(claimedParent!.task.id).toBe(flow.task.id);
    expect(claimedParent!.family).toEqual({ count: 3, base: 3 });
    const children = await s.store.readChildren(flow.task, 3);
    expect(children.map((c) => [c.id, c.type, c.status])).toEqual(ids.map((id) => [id, 'leaf', 'SUCCESS']));
    expect(children.map((c) => c.result)).toEqual(ids.map((id) => resultOf.get(id)));
    const done = await s.store.complete({ lease: claimedParent!.lease, result: { ok: true } });
    expect(done.status).toBe(TaskStatus.SUCCESS);
  });

  it('a child that fails fails its parent (CHILD_FAILED), unless it is optional', async () => {
    const s = await createTestStore(server.endpoint);
    const strict = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1, { maxAttempts: 1 }), leaf(2)] },
    });
    const lenient = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1, { maxAttempts: 1, optional: true }), leaf(2)] },
    });
    for (const c of await claimAll(s)) {
      if ((c.task.payload as { n: number }).n === 1)
        await s.store.fail({ lease: c.lease, error: 'boom', retryable: false });
      else await s.store.complete({ lease: c.lease, result: { n: 2 } });
    }
    const failed = await s.store.get({ id: strict.task.id });
    expect(failed.status).toBe(TaskStatus.FAILED);
    expect(failed.error).toMatch(/^CHILD_FAILED: child child-\w+ \(leaf\) ended FAILED: boom/);
    const queued = await s.store.get({ id: lenient.task.id });
    expect(queued.status).toBe(TaskStatus.QUEUED);
    const children = await s.store.readChildren(lenient.task, 2);
    expect(children.map((c) => [c.status, c.optional ?? false])).toEqual([
      [TaskStatus.FAILED, true],
      [TaskStatus.SUCCESS, false],
    ]);
    expect(children[0]!.error).toBe('boom');
  });

  it('counts a child once however often its end is counted (resent, repeated, recovery)', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
    });
    const [a] = await claimAll(s);
    const ended = await s.store.complete({ lease: a!.lease, result: 1 });
    const childItem = (await item(s, ended.id))!;
    for (let i = 0; i < 3; i++) await countChildEnd(s.store.ctx, childItem);
    await s.peer().recover();
    // The count write itself, sent again: refused by its condition, nothing moves.
    const again = await conditionalUpdate(
      writeTargetOf(s.store.ctx),
      taskKey(flow.task.id),
      asUpdate(childCounted(childItem.childIndex!, undefined)),
    );
    expect(again.applied).toBe(false);
    const parent = (await item(s, flow.task.id))!;
    expect(parent.childrenPending).toBe(1);
    expect([...parent.childrenEnded!]).toEqual([childItem.childIndex]);
    expect(parent.status).toBe(TaskStatus.WAITING_CHILDREN);
  });

  it('recovery makes the count a dead writer left undone, and moves the parent on', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1)] },
    });
    const [child] = await claimAll(s);
    // The child's end written, its count never made: the writer died between its two writes.
    await conditionalUpdate(
      writeTargetOf(s.store.ctx),
      taskKey(child!.task.id),
      asUpdate({
        assign: {
          status: TaskStatus.SUCCESS,
          leaseOwner: undefined,
          leaseUntil: undefined,
          sweepPk: undefined,
          sweepAt: undefined,
        },
        require: [],
      }),
    );
    expect((await s.peer().recover()).flowChecks).toBe(0); // its look is not due yet
    expect((await s.store.get({ id: flow.task.id })).status).toBe(TaskStatus.WAITING_CHILDREN);
    s.clock.advance(s.config.flowCheckMs + s.config.clockSkewMs + 1);
    const report = await s.peer().recover();
    expect(report.flowChecks).toBe(1);
    expect((await s.store.get({ id: flow.task.id })).status).toBe(TaskStatus.QUEUED);
  });

  it('a look that finds children still running sets the next one later, backed off', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1)] },
    });
    const first = (await item(s, flow.task.id))!.sweepAt!;
    s.clock.advance(s.config.flowCheckMs + s.config.clockSkewMs + 1);
    expect((await s.peer().recover()).flowChecks).toBe(1);
    const parent = (await item(s, flow.task.id))!;
    expect(parent.flowChecks).toBe(1);
    expect(parent.sweepAt! - s.clock.now()).toBe(s.config.flowCheckMs);
    expect(parent.sweepAt).toBeGreaterThan(first);
    expect(parent.status).toBe(TaskStatus.WAITING_CHILDREN);
    // The second look waits twice as long.
    s.clock.advance(s.config.flowCheckMs + s.config.clockSkewMs + 1);
    expect((await s.peer().recover()).flowChecks).toBe(1);
    expect((await item(s, flow.task.id))!.sweepAt! - s.clock.now()).toBe(2 * s.config.flowCheckMs);
  });

  it('cancelling a parent cancels its waiting children and asks its running ones to stop', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: {
        task: { type: 'sum' },
        children: [leaf(1), { task: { type: 'sum' }, children: [leaf(2)] }],
      },
    });
    const running = await claimAll(s, ['leaf']);
    expect(running).toHaveLength(2);
    const cancelled = await s.store.requestCancel({ id: flow.task.id });
    expect(cancelled.status).toBe(TaskStatus.CANCELLED);
    const all = await Promise.all(
      [flow.ids.children![0]!.id, flow.ids.children![1]!.id, flow.ids.children![1]!.children![0]!.id].map(
        (id) => s.store.get({ id }),
      ),
    );
    expect(all.map((t) => t.status)).toEqual([
      TaskStatus.CANCEL_REQUESTED,
      TaskStatus.CANCELLED,
      TaskStatus.CANCEL_REQUESTED,
    ]);
  });

  it('refuses a bad flow whole, naming the child and field, and writes nothing', async () => {
    const s = await createTestStore(server.endpoint);
    const before = (await s.scanAll()).length;
    const refusals = [
      {
        root: { task: { type: 'sum' }, children: [leaf(1), { task: { type: 'bad type' } }] },
        path: 'root.children.1.task.type',
      },
      {
        root: { task: { type: 'sum' }, children: [leaf(1), { task: { type: 'x', delayMs: 5 } }] },
        path: 'root.children.1.task',
      },
      { root: { task: { type: 'sum', optional: true }, children: [leaf(1)] }, path: 'root.task.optional' },
      { root: { task: { type: 'sum' }, children: [] }, path: 'root.children' },
      {
        root: {
          task: { type: 'a' },
          children: [
            {
              task: { type: 'b' },
              children: [
                {
                  task: { type: 'c' },
                  children: [
                    { task: { type: 'd' }, children: [{ task: { type: 'e' }, children: [leaf(1)] }] },
                  ],
                },
              ],
            },
          ],
        },
        path: 'root.children',
        message: /nests 5 levels of children; a flow may nest at most 4/,
      },
      {
        root: {
          task: { type: 'a' },
          children: Array.from({ length: 10 }, () => ({
            task: { type: 'b' },
            children: Array.from({ length: 100 }, (_, i) => leaf(i)),
          })),
        },
        path: 'root.children',
        message: /holds 1010 tasks below its root; a flow may hold at most 1000/,
      },
    ];
    for (const r of refusals) {
      const error = await s.store.enqueueFlow({ owner: 'o', root: r.root } as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      const problems = (error as ValidationError).problems;
      expect(problems.map((p) => p.path)).toContain(r.path);
      if (r.message) expect(problems.map((p) => p.message).join(' ')).toMatch(r.message);
    }
    expect((await s.scanAll()).length).toBe(before);
  });

  it('a flow sent again with its idempotency key is answered, and writes what the first send did not', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = {
      owner: 'o',
      idempotencyKey: 'render-7',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
    };
    const first = await s.store.enqueueFlow(flow);
    // The first send "died" before its second child was written.
    const { DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    await s.doc.send(
      new DeleteCommand({ TableName: s.config.tableName, Key: taskKey(first.ids.children![1]!.id) }),
    );
    const second = await s.store.enqueueFlow(flow);
    expect(second.created).toBe(false);
    expect(second.ids).toEqual(first.ids);
    expect(second.written.map((w) => w.id)).toEqual([first.ids.children![1]!.id]);
    const conflict = await s.store
      .enqueueFlow({ ...flow, root: { ...flow.root, children: [leaf(9)] } })
      .catch((e: unknown) => e);
    expect(conflict).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
  });

  it('a handler’s own children: raised, written, waited for; a retried attempt meets the same ids', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, maxAttempts: 3 });
    const [p1] = await claimAll(s, ['sum']);
    const raised = await s.store.enqueueChildren({
      lease: p1!.lease,
      parentOwner: 'o',
      children: [
        { type: 'leaf', payload: { n: 1 } },
        { type: 'leaf', payload: { n: 2 }, optional: true },
      ],
      from: 0,
      known: 0,
    });
    expect(raised.ids).toEqual([childTaskId(task.id, 0), childTaskId(task.id, 1)]);
    // The attempt dies before it waits; its lease runs out and recovery requeues the parent.
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs * 2 + 1);
    await s.peer().recover();
    const [p2] = await claimAll(s, ['sum']);
    expect(p2!.task.id).toBe(task.id);
    expect(p2!.family).toEqual({ count: 2, base: 0 });
    // The retried attempt enqueues the same children again: the same ids, no new tasks.
    const again = await s.store.enqueueChildren({
      lease: p2!.lease,
      parentOwner: 'o',
      children: [
        { type: 'leaf', payload: { n: 1 } },
        { type: 'leaf', payload: { n: 2 }, optional: true },
      ],
      from: 0,
      known: 2,
    });
    expect(again.ids).toEqual(raised.ids);
    const leaves = await claimAll(s, ['leaf']);
    expect(leaves.map((c) => c.task.id).sort()).toEqual([...raised.ids].sort());
    // A child ends before its parent waits: counted all the same.
    await s.store.complete({ lease: leaves[0]!.lease, result: { n: 1 } });
    const waiting = await s.store.waitForChildren({ lease: p2!.lease, childCount: 2 });
    expect(waiting.status).toBe(TaskStatus.WAITING_CHILDREN);
    expect(waiting.attempts).toBe(1); // the wait gave its attempt back
    await s.store.complete({ lease: leaves[1]!.lease, result: { n: 2 } });
    const [p3] = await claimAll(s, ['sum']);
    expect(p3!.family).toEqual({ count: 2, base: 2 });
    expect((await s.store.readChildren(task, 2)).map((c) => c.result)).toEqual(
      leaves.map((l) => ({ n: (l.task.payload as { n: number }).n })),
    );
  });

  it('a wait whose children have all ended makes the parent ready at once', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'sum', owner: 'o', payload: null });
    const [p] = await claimAll(s, ['sum']);
    await s.store.enqueueChildren({
      lease: p!.lease,
      parentOwner: 'o',
      children: [{ type: 'leaf' }],
      from: 0,
      known: 0,
    });
    const [c] = await claimAll(s, ['leaf']);
    await s.store.complete({ lease: c!.lease, result: null });
    const after = await s.store.waitForChildren({ lease: p!.lease, childCount: 1 });
    expect(after.status).toBe(TaskStatus.QUEUED);
  });
});

describe('flows under retries and cancels (dynalite or DynamoDB Local)', () => {
  it('a child never written counts as failed (CHILD_MISSING) once the parent has waited 15 minutes', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
    });
    const { DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    await s.doc.send(
      new DeleteCommand({ TableName: s.config.tableName, Key: taskKey(flow.ids.children![1]!.id) }),
    );
    const [child] = await claimAll(s);
    await s.store.complete({ lease: child!.lease, result: 1 });
    // Looks before the grace leave it waiting.
    for (const minutes of [2, 5, 10]) {
      s.clock.set(flow.task.createdAt + minutes * 60_000);
      await s.peer().recover();
      expect((await s.store.get({ id: flow.task.id })).status).toBe(TaskStatus.WAITING_CHILDREN);
    }
    s.clock.set(flow.task.createdAt + 60 * 60_000);
    await s.peer().recover();
    const parent = await s.store.get({ id: flow.task.id });
    expect(parent.status).toBe(TaskStatus.FAILED);
    expect(parent.error).toMatch(/CHILD_MISSING/);
  });

  it('refuses to retry a child while its parent waits, and a retried parent forgets its children’s failures', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: [leaf(1, { maxAttempts: 1 }), leaf(2)] },
    });
    const claimed = await claimAll(s);
    const failing = claimed.find((c) => (c.task.payload as { n: number }).n === 1)!;
    const other = claimed.find((c) => (c.task.payload as { n: number }).n === 2)!;
    await s.store.fail({ lease: failing.lease, error: 'boom', retryable: false });
    const refused = await s.store.retry({ id: failing.task.id }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'TASK_STATE_CONFLICT' });
    await s.store.complete({ lease: other.lease, result: 2 });
    expect((await s.store.get({ id: flow.task.id })).status).toBe(TaskStatus.FAILED);
    // The parent retried: a new round, its old children counted, their failure forgotten.
    await s.store.retry({ id: flow.task.id });
    const [p] = await claimAll(s, ['sum']);
    expect(p!.family).toEqual({ count: 2, base: 2 });
    await s.store.enqueueChildren({
      lease: p!.lease,
      parentOwner: 'o',
      children: [{ type: 'leaf' }],
      from: 2,
      known: 2,
    });
    await s.store.waitForChildren({ lease: p!.lease, childCount: 3 });
    const [c] = await claimAll(s, ['leaf']);
    await s.store.complete({ lease: c!.lease, result: 3 });
    const parent = await s.store.get({ id: flow.task.id });
    expect(parent.status).toBe(TaskStatus.QUEUED);
    expect(parent.children).toEqual({ total: 3, pending: 0 });
  });

  it('a cancel before the raise refuses it (no child written); after it, the wait finishes the cancel', async () => {
    const s = await createTestStore(server.endpoint);
    const a = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null });
    const b = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null });
    const claimed = await claimAll(s, ['sum']);
    const pa = claimed.find((c) => c.task.id === a.task.id)!;
    const pb = claimed.find((c) => c.task.id === b.task.id)!;
    await s.store.requestCancel({ id: a.task.id });
    const refused = await s.store
      .enqueueChildren({ lease: pa.lease, parentOwner: 'o', children: [{ type: 'leaf' }], from: 0, known: 0 })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'LEASE_LOST' });
    expect(await s.store.readChildren(a.task, 1)).toEqual([]);
    await s.store.enqueueChildren({
      lease: pb.lease,
      parentOwner: 'o',
      children: [{ type: 'leaf' }],
      from: 0,
      known: 0,
    });
    await s.store.requestCancel({ id: b.task.id });
    const after = await s.store.waitForChildren({ lease: pb.lease, childCount: 1 });
    expect(after.status).toBe(TaskStatus.CANCELLED);
  });
});

describe('reading many large results (dynalite or DynamoDB Local)', () => {
  it('under a byte budget the results are read in order until it is spent; the rest are marked, not held', async () => {
    const s = await createTestStore(server.endpoint);
    const flow = await s.store.enqueueFlow({
      owner: 'o',
      root: { task: { type: 'sum' }, children: Array.from({ length: 30 }, (_, n) => leaf(n)) },
    });
    // Each result is 50 KB: kept apart from the task item, in its own item.
    const big = 'r'.repeat(50 * 1024);
    for (const c of await claimAll(s, ['leaf']))
      await s.store.complete({ lease: c.lease, result: { n: (c.task.payload as { n: number }).n, big } });
    const all = await readChildren(s.store.ctx, flow.task, 30);
    expect(all.map((c) => (c.result as { n: number }).n)).toEqual(Array.from({ length: 30 }, (_, n) => n));
    expect(all.some((c) => c.resultOmitted)).toBe(false);
    // 512 KB: the first chunk of 20 (1 MB) is read, then the read stops.
    const budgeted = await readChildren(s.store.ctx, flow.task, 30, { resultBudgetBytes: 512 * 1024 });
    expect(budgeted.map((c) => c.id)).toEqual(all.map((c) => c.id));
    expect(budgeted.slice(0, 20).map((c) => (c.result as { n: number }).n)).toEqual(
      Array.from({ length: 20 }, (_, n) => n),
    );
    expect(budgeted.slice(20).every((c) => c.resultOmitted === true && !('result' in c))).toBe(true);
    expect(budgeted.every((c) => c.status === TaskStatus.SUCCESS)).toBe(true);
  });
});

describe('an id that comes back: a key used again after its retention (dynalite or DynamoDB Local)', () => {
  const pastRetention = (s: TestStore) => s.clock.advance(s.config.retentionDays * 86_400_000 + 60_000);

  /** Claims the sum task and enqueues a leaf child for each number from its handler. */
  async function claimAndSpawn(s: TestStore, n: number[]): Promise<Claimed> {
    const [p] = await claimAll(s, ['sum']);
    await s.store.enqueueChildren({
      lease: p!.lease,
      parentOwner: 'o',
      children: n.map((x) => ({ type: 'leaf', payload: { n: x } })),
      from: 0,
      known: 0,
    });
    return p!;
  }

  /** Runs every leaf, then the parent, to SUCCESS. */
  async function runFlow(s: TestStore): Promise<void> {
    for (const c of await claimAll(s, ['leaf']))
      await s.store.complete({ lease: c.lease, result: c.task.payload });
    for (const c of await claimAll(s, ['sum'])) await s.store.complete({ lease: c.lease, result: 'done' });
  }

  it('a flow sent with its key after the earlier one expired is a new flow; the old children are replaced or ignored', async () => {
    const s = await createTestStore(server.endpoint);
    const old = await s.store.enqueueFlow({
      owner: 'o',
      idempotencyKey: 'nightly',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
    });
    await runFlow(s);
    expect((await s.store.get({ id: old.task.id })).status).toBe(TaskStatus.SUCCESS);
    pastRetention(s);
    // Not yet removed by TTL: the old root and both children are still in the table.
    const again = await s.store.enqueueFlow({
      owner: 'o',
      idempotencyKey: 'nightly',
      root: { task: { type: 'sum' }, children: [leaf(7)] },
    });
    expect(again.created).toBe(true);
    expect(again.task.id).toBe(old.task.id);
    expect(again.written.map((w) => w.id)).toEqual([old.task.id, childTaskId(old.task.id, 0)]);
    expect(again.task.status).toBe(TaskStatus.WAITING_CHILDREN);
    expect(again.task.children).toEqual({ total: 1, pending: 1 });
    const child = await s.store.get({ id: childTaskId(old.task.id, 0) });
    expect([child.status, child.payload]).toEqual([TaskStatus.QUEUED, { n: 7 }]);
    await runFlow(s);
    const root = await s.store.get({ id: old.task.id });
    expect([root.status, root.attempts]).toEqual([TaskStatus.SUCCESS, 1]);
    // The old child 1 is still there, and is not the new root's child.
    expect((await item(s, childTaskId(old.task.id, 1)))?.status).toBe(TaskStatus.SUCCESS);
    expect((await s.store.readChildren(root, 2)).map((c) => c.result)).toEqual([{ n: 7 }]);
  });

  it('a task enqueued again after it expired: its children replace the old ones, and recovery counts none of those', async () => {
    const s = await createTestStore(server.endpoint);
    const spawn = (n: number[]) => claimAndSpawn(s, n);
    const { task } = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, idempotencyKey: 'p' });
    const first = await spawn([1, 2]);
    await s.store.waitForChildren({ lease: first.lease, childCount: 2 });
    await runFlow(s);
    expect((await s.store.get({ id: task.id })).status).toBe(TaskStatus.SUCCESS);
    const oldChild = (await item(s, childTaskId(task.id, 1)))!;
    pastRetention(s);

    const again = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, idempotencyKey: 'p' });
    expect([again.created, again.task.id]).toEqual([true, task.id]);
    const second = await spawn([5, 6]);
    const fresh = await s.store.get({ id: childTaskId(task.id, 0) });
    expect([fresh.status, fresh.payload]).toEqual([TaskStatus.QUEUED, { n: 5 }]);
    // As if the writer died after the raise and before child 1's put: the old child 1 is what is there.
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    await s.doc.send(new PutCommand({ TableName: s.config.tableName, Item: oldChild }));
    await s.store.waitForChildren({ lease: second.lease, childCount: 2 });
    const [leaf5] = await claimAll(s, ['leaf']);
    expect(leaf5!.task.id).toBe(fresh.id);
    await s.store.complete({ lease: leaf5!.lease, result: { n: 5 } });
    // Recovery's look: the old child 1 (ended SUCCESS) is not counted for this life.
    s.clock.advance(s.config.flowCheckMs + s.config.clockSkewMs + 1);
    await s.peer().recover();
    expect((await s.store.get({ id: task.id })).children).toEqual({ total: 2, pending: 1 });
    expect((await s.store.get({ id: task.id })).status).toBe(TaskStatus.WAITING_CHILDREN);
    // Never written in this life: missing, 15 minutes into the wait.
    s.clock.advance(60 * 60_000);
    await s.peer().recover();
    const parent = await s.store.get({ id: task.id });
    expect(parent.status).toBe(TaskStatus.FAILED);
    expect(parent.error).toMatch(/CHILD_MISSING/);
  });

  it('a child of the earlier life still queued when the id comes back never counts on the new parent', async () => {
    const s = await createTestStore(server.endpoint);
    const spawn = (n: number[]) => claimAndSpawn(s, n);
    const { task } = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, idempotencyKey: 'q' });
    // Its handler enqueued two children and ended without waiting for them: they are still queued.
    const first = await spawn([1, 2]);
    await s.store.complete({ lease: first.lease, result: 'did not wait' });
    pastRetention(s);
    await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, idempotencyKey: 'q' });
    const second = await spawn([5]);
    await s.store.waitForChildren({ lease: second.lease, childCount: 1 });
    // Child 0 was replaced by the new one; the old child 1 runs and ends, and is not counted.
    const leaves = await claimAll(s, ['leaf']);
    expect(
      leaves.map((c) => c.task.payload).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual([{ n: 2 }, { n: 5 }]);
    const old = leaves.find((c) => (c.task.payload as { n: number }).n === 2)!;
    await s.store.complete({ lease: old.lease, result: { n: 2 } });
    expect((await s.store.get({ id: task.id })).children).toEqual({ total: 1, pending: 1 });
    expect((await s.store.get({ id: task.id })).status).toBe(TaskStatus.WAITING_CHILDREN);
    const fresh = leaves.find((c) => (c.task.payload as { n: number }).n === 5)!;
    await s.store.complete({ lease: fresh.lease, result: { n: 5 } });
    const parent = await s.store.get({ id: task.id });
    expect([parent.status, parent.children]).toEqual([TaskStatus.QUEUED, { total: 1, pending: 0 }]);
    expect((await s.store.readChildren(parent, 2)).map((c) => c.result)).toEqual([{ n: 5 }]);
  });

  it('a child written before children carried their parent’s mark is of this life: read, counted, never replaced', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null, maxAttempts: 3 });
    const [p1] = await claimAll(s, ['sum']);
    const children = [{ type: 'leaf', payload: { n: 1 } }];
    await s.store.enqueueChildren({ lease: p1!.lease, parentOwner: 'o', children, from: 0, known: 0 });
    const childId = childTaskId(task.id, 0);
    // As written before the mark: no parentCreatedAt.
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    await s.doc.send(
      new UpdateCommand({
        TableName: s.config.tableName,
        Key: taskKey(childId),
        UpdateExpression: 'REMOVE parentCreatedAt',
      }),
    );
    const [leafClaim] = await claimAll(s, ['leaf']);
    await s.store.complete({ lease: leafClaim!.lease, result: { n: 1 } });
    // The parent's attempt dies before it waits; the retried one enqueues the same child again.
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs * 2 + 1);
    await s.peer().recover();
    const [p2] = await claimAll(s, ['sum']);
    await s.store.enqueueChildren({ lease: p2!.lease, parentOwner: 'o', children, from: 0, known: 1 });
    expect((await s.store.get({ id: childId })).status).toBe(TaskStatus.SUCCESS);
    await s.store.waitForChildren({ lease: p2!.lease, childCount: 1 });
    const parent = await s.store.get({ id: task.id });
    expect(parent.status).toBe(TaskStatus.QUEUED);
    expect((await s.store.readChildren(parent, 1)).map((c) => c.result)).toEqual([{ n: 1 }]);
  });

  it('children written where the clock is behind their parent’s are of its life all the same', async () => {
    const s = await createTestStore(server.endpoint);
    const behind = s.peer({ clock: new ManualClock(s.clock.now() - 5_000) });
    const flow = {
      owner: 'o',
      idempotencyKey: 'skew',
      root: { task: { type: 'sum' }, children: [leaf(1), leaf(2)] },
    };
    const first = await s.store.enqueueFlow(flow);
    // The first send died before child 1; its resend runs where the clock is 5 s behind.
    const child1 = childTaskId(first.task.id, 1);
    const { DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    await s.doc.send(new DeleteCommand({ TableName: s.config.tableName, Key: taskKey(child1) }));
    expect((await behind.enqueueFlow(flow)).written.map((w) => w.id)).toEqual([child1]);
    expect((await item(s, child1))!.createdAt).toBe(first.task.createdAt);
    // A handler's children, enqueued on a worker whose clock is 5 s behind the enqueue's.
    const { task } = await s.store.enqueue({ type: 'sum', owner: 'o', payload: null });
    const [p] = await claimAll(s, ['sum']);
    await behind.enqueueChildren({
      lease: p!.lease,
      parentOwner: 'o',
      children: [{ type: 'leaf', payload: { n: 3 } }],
      from: 0,
      known: 0,
    });
    await s.store.waitForChildren({ lease: p!.lease, childCount: 1 });
    await runFlow(s);
    // Each parent read all its children, and summed them.
    expect((await s.store.readChildren(first.task, 2)).map((c) => c.result)).toEqual([{ n: 1 }, { n: 2 }]);
    expect((await s.store.readChildren(task, 1)).map((c) => c.result)).toEqual([{ n: 3 }]);
    expect((await s.store.get({ id: task.id })).status).toBe(TaskStatus.SUCCESS);
  });

  it('two different flows sent at once with one key: one is written, the other refused with none of its children', async () => {
    const s = await createTestStore(server.endpoint);
    const send = (children: number[]) =>
      s.store.enqueueFlow({
        owner: 'o',
        idempotencyKey: 'race',
        root: { task: { type: 'sum' }, children: children.map((n) => leaf(n)) },
      });
    const answers = await Promise.allSettled([send([1]), send([1, 2, 3])]);
    const won = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    const lost = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason as unknown] : []));
    expect(won).toHaveLength(1);
    expect(lost).toEqual([expect.objectContaining({ code: 'IDEMPOTENCY_CONFLICT' })]);
    const rootId = won[0]!.task.id;
    const total = won[0]!.ids.children!.length;
    const children = (await s.scanAll()).filter((i) => i.sk === 'TASK' && i.parentId === rootId);
    expect(children.map((c) => c.childIndex).sort()).toEqual(Array.from({ length: total }, (_, i) => i));
  });
});

describe('steps (dynalite or DynamoDB Local)', () => {
  it('stores a step under its token; a stale attempt cannot overwrite a newer one’s', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'leaf', owner: 'o', payload: null });
    const at = (token: number) => ({ taskId: task.id, token, createdAt: task.createdAt });
    await s.store.writeStep(at(5), 'charge', '{"id":"ch_1"}');
    await s.store.writeStep(at(5), 'charge', '{"id":"ch_1"}'); // a resend
    await s.store.writeStep(at(6), 'charge', '{"id":"ch_2"}');
    const stale = await s.store.writeStep(at(5), 'charge', '{"id":"ch_3"}').catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: 'STEP_FENCED' });
    const steps = await s.store.readSteps(task);
    expect([...steps.values()].map((st) => [st.name, st.result, st.token])).toEqual([
      ['charge', '{"id":"ch_2"}', 6],
    ]);
  });

  it('never replays the steps of an earlier task of the same id (its key used again after it expired)', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'leaf', owner: 'o', payload: null });
    await s.store.writeStep({ taskId: task.id, token: 1, createdAt: task.createdAt - 1 }, 'charge', '"old"');
    expect((await s.store.readSteps(task)).size).toBe(0);
    expect(
      (await s.store.readSteps({ id: task.id, createdAt: task.createdAt - 1 })).get('charge')!.result,
    ).toBe('"old"');
  });
});
