import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdempotencyConflictError,
  LeaseLostError,
  TaskNotFoundError,
  TaskStateConflictError,
} from '../shared/errors.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
let t: TestStore;
const worker = 'worker-a';

beforeAll(async () => {
  server = await startTestDynamo();
  t = await createTestStore(
    server.endpoint,
    { backoffBaseMs: 1000, backoffMaxMs: 8000 },
    { random: () => 0.5 },
  );
});
afterAll(() => server.close());

describe('a task from enqueue to a terminal state', () => {
  it('enqueues QUEUED, claims RUNNING with a token, completes SUCCESS with its result', async () => {
    const { task, created } = await t.store.enqueue({
      type: 'email.send',
      payload: { to: 'a@example.com' },
      owner: 'alice',
    });
    expect(created).toBe(true);
    expect(task).toMatchObject({
      status: 'QUEUED',
      attempts: 0,
      leaseToken: 0,
      priority: 0,
      payload: { to: 'a@example.com' },
    });

    const { claimed } = await t.store.claim({ workerId: worker, types: ['email.send'], max: 5 });
    expect(claimed).toHaveLength(1);
    const { lease, task: running } = claimed[0]!;
    expect(running).toMatchObject({
      id: task.id,
      status: 'RUNNING',
      attempts: 1,
      leaseToken: 1,
      leaseOwner: worker,
    });
    expect(lease.leaseUntil).toBe(t.clock.now() + t.config.leaseTimeoutMs);

    t.clock.advance(1234);
    const done = await t.store.complete({ lease, result: { messageId: 'm-1' } });
    expect(done).toMatchObject({
      status: 'SUCCESS',
      result: { messageId: 'm-1' },
      finishedAt: t.clock.now(),
    });
    expect(done.leaseOwner).toBeUndefined();
    expect((await t.store.get({ id: task.id })).status).toBe('SUCCESS');
    // Nothing left to claim.
    expect((await t.store.claim({ workerId: worker, types: ['email.send'], max: 5 })).claimed).toHaveLength(
      0,
    );
  });

  it('retries a failed attempt after an exponential backoff with jitter, then fails for good at maxAttempts', async () => {
    const { task } = await t.store.enqueue({ type: 'flaky', owner: 'alice', maxAttempts: 2 });
    const first = (await t.store.claim({ workerId: worker, types: ['flaky'], max: 1 })).claimed[0]!;
    const requeued = await t.store.fail({ lease: first.lease, error: 'boom 1' });
    // attempt 1, base 1000 ms, random 0.5: 500 + 0.5 * 500 = 750 ms.
    expect(requeued).toMatchObject({ status: 'QUEUED', error: 'boom 1', availableAt: t.clock.now() + 750 });

    // Not due yet: not claimable, and not promoted.
    expect((await t.store.claim({ workerId: worker, types: ['flaky'], max: 1 })).claimed).toHaveLength(0);
    expect((await t.store.recover()).promoted).toBe(0);
    t.clock.advance(750);
    expect((await t.store.recover()).promoted).toBe(1);

    const second = (await t.store.claim({ workerId: worker, types: ['flaky'], max: 1 })).claimed[0]!;
    expect(second.task).toMatchObject({ id: task.id, attempts: 2, leaseToken: 2 });
    const failed = await t.store.fail({ lease: second.lease, error: 'boom 2' });
    expect(failed).toMatchObject({ status: 'FAILED', error: 'boom 2', attempts: 2 });
    expect(failed.finishedAt).toBe(t.clock.now());
  });

  it('fails at once when the error is not retryable', async () => {
    await t.store.enqueue({ type: 'fatal', owner: 'alice', maxAttempts: 5 });
    const c = (await t.store.claim({ workerId: worker, types: ['fatal'], max: 1 })).claimed[0]!;
    expect(await t.store.fail({ lease: c.lease, error: 'bad payload', retryable: false })).toMatchObject({
      status: 'FAILED',
      attempts: 1,
    });
  });

  it('release gives the task back without spending an attempt', async () => {
    const { task } = await t.store.enqueue({ type: 'released', owner: 'alice', maxAttempts: 1 });
    const c = (await t.store.claim({ workerId: worker, types: ['released'], max: 1 })).claimed[0]!;
    expect(await t.store.release({ lease: c.lease })).toMatchObject({ status: 'QUEUED', attempts: 0 });
    const again = (await t.store.claim({ workerId: worker, types: ['released'], max: 1 })).claimed[0]!;
    expect(again.task).toMatchObject({ id: task.id, attempts: 1, leaseToken: 2 });
    // The old lease's token is stale now.
    await expect(t.store.complete({ lease: c.lease })).rejects.toBeInstanceOf(LeaseLostError);
    expect((await t.store.complete({ lease: again.lease })).status).toBe('SUCCESS');
  });

  it('renewal extends the lease, stores progress, and reports a cancel request', async () => {
    const { task } = await t.store.enqueue({ type: 'long', owner: 'alice' });
    const c = (await t.store.claim({ workerId: worker, types: ['long'], max: 1 })).claimed[0]!;
    t.clock.advance(t.config.heartbeatIntervalMs);
    const [renewed] = await t.store.renew({
      leases: [c.lease],
      progress: { [task.id]: { fraction: 0.25, note: 'page 1' } },
    });
    expect(renewed).toMatchObject({ outcome: 'renewed' });
    const lease = renewed!.outcome === 'renewed' ? renewed!.lease : c.lease;
    expect(lease.leaseUntil).toBe(t.clock.now() + t.config.leaseTimeoutMs);
    expect(await t.store.get({ id: task.id })).toMatchObject({
      progress: 0.25,
      progressNote: 'page 1',
      leaseUntil: lease.leaseUntil,
    });

    expect((await t.store.requestCancel({ id: task.id })).status).toBe('CANCEL_REQUESTED');
    const [answer] = await t.store.renew({ leases: [lease] });
    expect(answer!.outcome).toBe('cancel-requested');
    expect((await t.store.finishCancel({ lease })).status).toBe('CANCELLED');
  });

  it('a failing attempt of a task whose cancel was requested ends CANCELLED, not requeued', async () => {
    const { task } = await t.store.enqueue({ type: 'cancel-then-fail', owner: 'alice' });
    const c = (await t.store.claim({ workerId: worker, types: ['cancel-then-fail'], max: 1 })).claimed[0]!;
    await t.store.requestCancel({ id: task.id });
    expect((await t.store.fail({ lease: c.lease, error: 'aborted' })).status).toBe('CANCELLED');
  });

  it('cancels a QUEUED task at once and refuses to cancel a finished one', async () => {
    const { task } = await t.store.enqueue({ type: 'to-cancel', owner: 'bob' });
    expect((await t.store.requestCancel({ id: task.id, owner: 'bob' })).status).toBe('CANCELLED');
    expect((await t.store.claim({ workerId: worker, types: ['to-cancel'], max: 1 })).claimed).toHaveLength(0);
    const error = await t.store.requestCancel({ id: task.id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskStateConflictError);
    expect((error as TaskStateConflictError).task.status).toBe('CANCELLED');
    await expect(t.store.requestCancel({ id: task.id, owner: 'mallory' })).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
  });
});

describe('idempotent enqueue', () => {
  it('returns the first task for a repeated key and refuses a different request under the same key', async () => {
    const first = await t.store.enqueue({
      type: 'report',
      payload: { month: 11 },
      owner: 'carol',
      idempotencyKey: 'nov',
    });
    const again = await t.store.enqueue({
      type: 'report',
      payload: { month: 11 },
      owner: 'carol',
      idempotencyKey: 'nov',
    });
    expect(first.created).toBe(true);
    expect(again).toEqual({ task: first.task, created: false });

    const conflict = await t.store
      .enqueue({ type: 'report', payload: { month: 12 }, owner: 'carol', idempotencyKey: 'nov' })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(IdempotencyConflictError);
    expect((conflict as IdempotencyConflictError).existing.id).toBe(first.task.id);

    // The key is per owner: another owner gets its own task.
    const other = await t.store.enqueue({
      type: 'report',
      payload: { month: 12 },
      owner: 'dave',
      idempotencyKey: 'nov',
    });
    expect(other.created).toBe(true);
    expect(other.task.id).not.toBe(first.task.id);
  });
});

describe('listing a caller’s tasks', () => {
  it('lists newest first, filters by status and type, and pages with a cursor', async () => {
    const owner = 'lister';
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      t.clock.advance(10);
      ids.push((await t.store.enqueue({ type: i % 2 ? 'odd' : 'even', owner, payload: { i } })).task.id);
    }
    await t.store.requestCancel({ id: ids[6]! });

    const page1 = await t.store.list({ owner, limit: 3 });
    expect(page1.tasks.map((x) => x.id)).toEqual([ids[6], ids[5], ids[4]]);
    const page2 = await t.store.list({ owner, limit: 3, cursor: page1.nextCursor! });
    expect(page2.tasks.map((x) => x.id)).toEqual([ids[3], ids[2], ids[1]]);
    const page3 = await t.store.list({ owner, limit: 3, cursor: page2.nextCursor! });
    expect(page3.tasks.map((x) => x.id)).toEqual([ids[0]]);
    expect(page3.nextCursor).toBeUndefined();

    expect((await t.store.list({ owner, type: 'odd' })).tasks.map((x) => x.id)).toEqual([
      ids[5],
      ids[3],
      ids[1],
    ]);
    expect((await t.store.list({ owner, status: 'CANCELLED' })).tasks.map((x) => x.id)).toEqual([ids[6]]);
    expect((await t.store.list({ owner: 'nobody' })).tasks).toEqual([]);
  });
});
