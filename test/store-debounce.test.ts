/**
 * Debounce (shared/store/debounce.ts) on a store with a manual clock: enqueues of one key within the
 * window join one waiting task, which is due the window after the last and carries the last payload
 * (inline or kept apart); once it has started, the next enqueue makes a new task; keys are per owner
 * and type; racing enqueues of a fresh key make exactly one task; bad input writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../shared/errors.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { TaskStatus } from '../shared/task-model.js';
import { conditionalUpdate } from '../shared/store/conditional-write.js';
import { writeTargetOf } from '../shared/store/context.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { asUpdate, debounceJoined } from '../shared/store/transitions.js';
import { taskKey } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const WINDOW = 5_000;
const debounced = (s: TestStore, payload: unknown, key = 'user-7', owner = 'o', type = 'job') =>
  s.store.enqueue({ type, owner, payload, debounce: { key, windowMs: WINDOW } });

const claimAll = async (s: TestStore) =>
  (await s.store.claim({ workerId: 'w', types: ['job'], max: 10 }, new ClaimState())).claimed;

describe('debounced enqueues (dynalite or DynamoDB Local)', () => {
  it('collapse into one task due the window after the last, with the last payload', async () => {
    const s = await createTestStore(server.endpoint);
    const first = await debounced(s, { n: 1 });
    expect(first.created).toBe(true);
    expect(first.task.availableAt).toBe(s.clock.now() + WINDOW);
    s.clock.advance(3_000);
    const second = await debounced(s, { n: 2, note: 'x'.repeat(500) });
    s.clock.advance(3_000);
    const third = await debounced(s, { n: 3, note: 'y'.repeat(300) });
    expect([second.created, second.joined, third.created, third.joined]).toEqual([false, true, false, true]);
    expect(new Set([first.task.id, second.task.id, third.task.id]).size).toBe(1);
    const task = await s.store.get({ id: first.task.id });
    expect(task.availableAt).toBe(s.clock.now() + WINDOW);
    expect(task.payload).toEqual({ n: 3, note: 'y'.repeat(300) });
    expect(task.debounceKey).toBe('user-7');
    // Not due before the window after the last enqueue; due then, and runs with the last payload.
    s.clock.advance(WINDOW - 1);
    expect(await s.store.promote({ id: first.task.id })).toBe(false);
    expect(await claimAll(s)).toEqual([]);
    s.clock.advance(1);
    expect(await s.store.promote({ id: first.task.id })).toBe(true);
    const [claimed] = await claimAll(s);
    expect(claimed!.task.id).toBe(first.task.id);
    expect(claimed!.task.payload).toEqual({ n: 3, note: 'y'.repeat(300) });
    // Only the last payload's item is left named; the earlier one is marked for TTL.
    const bodies = (await s.scanAll()).filter((i) => String(i.sk).startsWith('PAYLOAD'));
    const live = bodies.filter((b) => (b.expiresAt as number) * 1000 > s.clock.now());
    expect(live).toHaveLength(1);
  });

  it('starts a new task once the last one has started', async () => {
    const s = await createTestStore(server.endpoint);
    const first = await debounced(s, { n: 1 });
    s.clock.advance(WINDOW);
    await s.store.promote({ id: first.task.id });
    expect(await claimAll(s)).toHaveLength(1);
    const next = await debounced(s, { n: 2 });
    expect(next.created).toBe(true);
    expect(next.task.id).not.toBe(first.task.id);
    const again = await debounced(s, { n: 3 });
    expect([again.joined, again.task.id]).toEqual([true, next.task.id]);
    expect((await s.store.get({ id: first.task.id })).status).toBe(TaskStatus.RUNNING);
  });

  it('joins a task already promoted to the ready index: out of it, delayed again', async () => {
    const s = await createTestStore(server.endpoint);
    const first = await debounced(s, { n: 1 });
    s.clock.advance(WINDOW);
    expect(await s.store.promote({ id: first.task.id })).toBe(true);
    const ready = (await s.scanAll()).find((i) => i.id === first.task.id)!;
    expect(ready.readyPk).toBeDefined();
    const joined = await debounced(s, { n: 2 });
    expect([joined.joined, joined.task.id]).toEqual([true, first.task.id]);
    const item = (await s.scanAll()).find((i) => i.id === first.task.id)!;
    expect([item.readyPk, item.delayAt]).toEqual([undefined, s.clock.now() + WINDOW]);
    expect(await claimAll(s)).toEqual([]);
  });

  it('never joins a task that ran, even once a retry gave its attempts back', async () => {
    const s = await createTestStore(server.endpoint);
    const first = await debounced(s, { n: 1 });
    s.clock.advance(WINDOW);
    await s.store.promote({ id: first.task.id });
    const [claimed] = await claimAll(s);
    await s.store.fail({ lease: claimed!.lease, error: 'boom', retryable: false });
    const retried = await s.store.retry({ id: first.task.id });
    expect([retried.status, retried.attempts]).toEqual([TaskStatus.QUEUED, 0]);
    const next = await debounced(s, { n: 2 });
    expect([next.created, next.task.id === first.task.id]).toEqual([true, false]);
  });

  it('a join built on an older read (a resend of a join whose answer was lost) is refused', async () => {
    const s = await createTestStore(server.endpoint);
    const first = await debounced(s, { n: 1 });
    const stale = (await s.scanAll()).find((i) => i.id === first.task.id)! as unknown as TaskItem;
    s.clock.advance(1_000);
    await debounced(s, { n: 2 });
    const resend = await conditionalUpdate(
      writeTargetOf(s.store.ctx),
      taskKey(first.task.id),
      asUpdate(debounceJoined(stale, { payload: '{"n":1}' }, s.clock.now() + WINDOW, s.clock.now())),
    );
    expect(resend.applied).toBe(false);
    expect((await s.store.get({ id: first.task.id })).payload).toEqual({ n: 2 });
  });

  it('a key is per owner and type', async () => {
    const s = await createTestStore(server.endpoint);
    const ids = new Set([
      (await debounced(s, 1)).task.id,
      (await debounced(s, 2, 'user-7', 'other-owner')).task.id,
      (await debounced(s, 3, 'user-7', 'o', 'other-type')).task.id,
      (await debounced(s, 4, 'user-8')).task.id,
    ]);
    expect(ids.size).toBe(4);
  });

  it('racing enqueues of a fresh key make exactly one task', { timeout: 20_000 }, async () => {
    const s = await createTestStore(server.endpoint);
    const stores = Array.from({ length: 6 }, () => s.peer());
    const results = await Promise.all(
      stores.map((store, i) =>
        store.enqueue({ type: 'job', owner: 'o', payload: { i }, debounce: { key: 'k', windowMs: WINDOW } }),
      ),
    );
    expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.filter((r) => r.joined)).toHaveLength(5);
    const tasks = (await s.scanAll()).filter((i) => i.sk === 'TASK');
    expect(tasks).toHaveLength(1);
  });

  it('refuses a debounce with a due time, an idempotency key or a bad window, and writes nothing', async () => {
    const s = await createTestStore(server.endpoint);
    const bad = [
      { debounce: { key: 'k', windowMs: 1_000 }, delayMs: 10 },
      { debounce: { key: 'k', windowMs: 1_000 }, idempotencyKey: 'i' },
      { debounce: { key: 'k', windowMs: 0 } },
      { debounce: { key: '', windowMs: 1_000 } },
      { debounce: { key: 'k', windowMs: 86_400_001 } },
    ];
    for (const extra of bad)
      await expect(s.store.enqueue({ type: 'job', owner: 'o', ...extra })).rejects.toThrow(ValidationError);
    await expect(
      s.store.enqueue({ type: 'job', owner: 'o', debounce: { key: 'k', windowMs: 1_000 }, delayMs: 10 }),
    ).rejects.toThrow(/debounce.*no due time or delay/);
    expect(await s.scanAll()).toEqual([]);
  });
});
