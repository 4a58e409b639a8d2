import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../shared/errors.js';
import type { Lease } from '../shared/task-inputs.js';
import type { TaskStore } from '../shared/store/task-store.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
let t: TestStore;
let lease: Lease;

beforeAll(async () => {
  server = await startTestDynamo();
  t = await createTestStore(server.endpoint);
  await t.store.enqueue({ type: 'valid', owner: 'o' });
  lease = (await t.store.claim({ workerId: 'w', types: ['valid'], max: 1 })).claimed[0]!.lease;
});
afterAll(() => server.close());

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

/** Each case: the operation, the bad input, and the field the error must name. */
const cases: [string, (s: TaskStore) => Promise<unknown>, string][] = [
  ['enqueue without a type', (s) => s.enqueue({ owner: 'o' } as never), 'type'],
  ['enqueue with a type that has spaces', (s) => s.enqueue({ type: 'has space', owner: 'o' }), 'type'],
  [
    'enqueue with a fractional priority',
    (s) => s.enqueue({ type: 'x', owner: 'o', priority: 1.5 }),
    'priority',
  ],
  [
    'enqueue with a priority out of range',
    (s) => s.enqueue({ type: 'x', owner: 'o', priority: 5000 }),
    'priority',
  ],
  [
    'enqueue with both availableAt and delayMs',
    (s) => s.enqueue({ type: 'x', owner: 'o', availableAt: 1, delayMs: 1 }),
    'delayMs',
  ],
  ['enqueue with a negative delay', (s) => s.enqueue({ type: 'x', owner: 'o', delayMs: -1 }), 'delayMs'],
  ['enqueue with maxAttempts 0', (s) => s.enqueue({ type: 'x', owner: 'o', maxAttempts: 0 }), 'maxAttempts'],
  [
    'enqueue with maxAttempts 101',
    (s) => s.enqueue({ type: 'x', owner: 'o', maxAttempts: 101 }),
    'maxAttempts',
  ],
  ['enqueue with an empty owner', (s) => s.enqueue({ type: 'x', owner: '' }), 'owner'],
  [
    'enqueue with an idempotency key of 129 characters',
    (s) => s.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'k'.repeat(129) }),
    'idempotencyKey',
  ],
  [
    // Review 2, finding 7: it hashed to the same id as 'order-\udbff' (both U+FFFD in UTF-8).
    'enqueue with an idempotency key holding a lone surrogate',
    (s) => s.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'order-\ud800' }),
    'idempotencyKey',
  ],
  [
    'enqueue with an idempotency key ending in half a pair',
    (s) => s.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'order-\udfff' }),
    'idempotencyKey',
  ],
  [
    'enqueue with a payload over 256 KB',
    (s) => s.enqueue({ type: 'x', owner: 'o', payload: 'x'.repeat(300_000) }),
    'payload',
  ],
  ['enqueue with a cyclic payload', (s) => s.enqueue({ type: 'x', owner: 'o', payload: cyclic }), 'payload'],
  [
    'enqueue with NaN in the payload',
    (s) => s.enqueue({ type: 'x', owner: 'o', payload: { n: Number.NaN } }),
    'payload',
  ],
  [
    'enqueue with a Date in the payload',
    (s) => s.enqueue({ type: 'x', owner: 'o', payload: { at: new Date() } }),
    'payload',
  ],
  [
    'enqueue with a payload nested 3,000 deep',
    (s) =>
      s.enqueue({ type: 'x', owner: 'o', payload: JSON.parse(`${'['.repeat(3000)}${']'.repeat(3000)}`) }),
    'payload',
  ],
  [
    'enqueue with a payload nested 65 deep',
    (s) =>
      s.enqueue({ type: 'x', owner: 'o', payload: JSON.parse(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`) }),
    'payload',
  ],
  [
    'enqueue with an owner in the prefix reserved for schedules',
    (s) => s.enqueue({ type: 'x', owner: 'SCHEDULES#alice' }),
    'owner',
  ],
  ['enqueue with an unknown field', (s) => s.enqueue({ type: 'x', owner: 'o', colour: 'red' } as never), ''],
  ['get with an id that has a slash', (s) => s.get({ id: 'a/b' }), 'id'],
  ['list with limit 0', (s) => s.list({ owner: 'o', limit: 0 }), 'limit'],
  ['list with an unknown status', (s) => s.list({ owner: 'o', status: 'DONE' as never }), 'status'],
  ['list with a forged cursor', (s) => s.list({ owner: 'o', cursor: 'not-a-cursor' }), 'cursor'],
  [
    'list with another owner’s cursor',
    (s) =>
      s.list({
        owner: 'o',
        cursor: Buffer.from(
          JSON.stringify({ pk: 'TASK#a', sk: 'TASK', ownerPk: 'x', ownerSk: '1#a' }),
        ).toString('base64url'),
      }),
    'cursor',
  ],
  [
    'list with a cursor of empty keys',
    (s) =>
      s.list({
        owner: 'o',
        cursor: Buffer.from(JSON.stringify({ pk: '', sk: '', ownerPk: 'o', ownerSk: '' })).toString(
          'base64url',
        ),
      }),
    'cursor',
  ],
  ['claim with no types', (s) => s.claim({ workerId: 'w', types: [], max: 1 }), 'types'],
  ['claim with max 0', (s) => s.claim({ workerId: 'w', types: ['valid'], max: 0 }), 'max'],
  [
    'claim with a worker id that has spaces',
    (s) => s.claim({ workerId: 'a b', types: ['valid'], max: 1 }),
    'workerId',
  ],
  [
    'renew with a lease that has no token',
    (s) => s.renew({ leases: [{ ...lease, token: 0 }] }),
    'leases.0.token',
  ],
  ['complete with a result over 64 KB', (s) => s.complete({ lease, result: 'r'.repeat(70_000) }), 'result'],
  ['complete without a lease', (s) => s.complete({} as never), 'lease'],
  ['fail with an empty error', (s) => s.fail({ lease, error: '' }), 'error'],
  [
    'fail with a negative backoff',
    (s) => s.fail({ lease, error: 'e', backoff: { baseMs: -1, maxMs: 1 } }),
    'backoff.baseMs',
  ],
  [
    'release with a lease of a malformed task id',
    (s) => s.release({ lease: { ...lease, taskId: '../etc' } }),
    'lease.taskId',
  ],
  [
    'finishCancel with a fractional token',
    (s) => s.finishCancel({ lease: { ...lease, token: 1.5 } }),
    'lease.token',
  ],
  ['requestCancel with an empty id', (s) => s.requestCancel({ id: '' }), 'id'],
];

describe('bad input to every store operation', () => {
  it.each(cases)(
    '%s: a ValidationError naming the field, and nothing written',
    async (_name, call, field) => {
      const before = JSON.stringify(await t.scanAll());
      const error = await call(t.store).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      const v = error as ValidationError;
      expect(v.name).toBe('ValidationError');
      expect(v.problems.some((p) => p.path === field)).toBe(true);
      expect(v.message).toContain(field === '' ? 'Unrecognized key' : field);
      expect(JSON.stringify(await t.scanAll())).toBe(before);
    },
  );

  it('reports every bad field of one input at once', async () => {
    const error = (await t.store
      .enqueue({ type: '', owner: '', priority: 0.5, maxAttempts: 0 })
      .catch((e: unknown) => e)) as ValidationError;
    expect(error.problems.map((p) => p.path).sort()).toEqual(['maxAttempts', 'owner', 'priority', 'type']);
  });
});
