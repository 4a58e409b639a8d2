import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemSizeBytes } from '../shared/store/write-units.js';
import { IdempotencyConflictError, LeaseLostError } from '../shared/errors.js';
import {
  bodyExpiry,
  INLINE_BODY_BYTES,
  outcomeSortKey,
  payloadSortKey,
} from '../shared/store/body-layout.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { taskKey } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** A realistic producer: a role ARN as owner, and an idempotency key. */
const OWNER = 'arn:aws:iam::123456789012:role/orders-service-producer';
const TYPE = 'invoice.send';

const text = (bytes: number) => 'x'.repeat(bytes);

async function read(s: TestStore, id: string, sk = 'TASK') {
  const key = { ...taskKey(id), sk };
  return (await s.doc.send(new GetCommand({ TableName: s.config.tableName, Key: key, ConsistentRead: true })))
    .Item;
}

/** The table write units DynamoDB reported for what `step` sent (index writes apart; dynalite bills by item size, as DynamoDB does). */
async function unitsOf<T>(s: TestStore, step: () => Promise<T>): Promise<{ value: T; units: number }> {
  s.meter.reset();
  const value = await step();
  const units = ['PutItem', 'UpdateItem'].reduce((sum, op) => sum + (s.meter.tableCapacity.get(op) ?? 0), 0);
  return { value, units };
}

describe('a payload, result or error too large for the task item has an item of its own', () => {
  it.each([1024, 10 * 1024, 100 * 1024, 250 * 1024])(
    'payload of %i bytes: enqueue pays for it once; claim, every renewal and complete write 1 unit each',
    async (bytes) => {
      const s = await createTestStore(server.endpoint);
      const payload = text(bytes - 2); // its JSON: the quotes make it `bytes`
      const enqueued = await unitsOf(s, () =>
        s.store.enqueue({ type: TYPE, owner: OWNER, payload, idempotencyKey: 'order-5678-invoice' }),
      );
      const { task } = enqueued.value;
      expect(task.payload).toBe(payload);
      // The payload item (its size in units) and the task item (1).
      expect(enqueued.units).toBe(Math.ceil((bytes + 200) / 1024) + 1);

      const claim = await unitsOf(s, () => s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 }));
      expect(claim.units).toBe(1);
      const [claimed] = claim.value.claimed;
      expect(claimed!.task.payload).toBe(payload);
      let lease = claimed!.lease;
      for (let i = 0; i < 3; i++) {
        s.clock.advance(s.config.heartbeatIntervalMs);
        const renewal = await unitsOf(s, () =>
          s.store.renew({
            leases: [lease],
            progress: { [lease.taskId]: { fraction: 0.5, note: 'half way' } },
          }),
        );
        expect(renewal.units).toBe(1);
        const [outcome] = renewal.value;
        if (outcome?.outcome !== 'renewed') throw new Error(`renewal ${i}: ${outcome?.outcome}`);
        lease = outcome.lease;
      }
      const running = (await read(s, task.id)) as TaskItem;
      expect(itemSizeBytes(running)).toBeLessThan(1024);
      expect(running.payload).toBeUndefined();
      expect(running.payloadBytes).toBe(bytes);

      const complete = await unitsOf(s, () => s.store.complete({ lease, result: { sent: true } }));
      expect(complete.units).toBe(1);
      expect(complete.value).toMatchObject({ status: 'SUCCESS', result: { sent: true } });
      const got = await s.store.get({ id: task.id });
      expect(got).toMatchObject({ payload, result: { sent: true }, payloadBytes: bytes });
    },
  );

  it('a small payload stays in the task item: no second write, no read at claim', async () => {
    const s = await createTestStore(server.endpoint);
    const payload = { invoiceId: 'inv_12345', email: 'someone@example.com' };
    expect(JSON.stringify(payload).length).toBeLessThanOrEqual(INLINE_BODY_BYTES);
    const enqueued = await unitsOf(s, () => s.store.enqueue({ type: TYPE, owner: OWNER, payload }));
    expect(s.meter.count('PutItem')).toBe(1);
    expect(enqueued.value.task.payload).toEqual(payload);
    s.meter.reset();
    const { claimed } = await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 });
    expect(claimed[0]!.task.payload).toEqual(payload);
    expect(s.meter.count('GetItem', 'BatchGetItem')).toBe(0);
    expect(await read(s, enqueued.value.task.id, payloadSortKey())).toBeUndefined();
  });

  it('the payload item carries its TTL from the due time: maxWaitDays plus retentionDays', async () => {
    const s = await createTestStore(server.endpoint, { maxWaitDays: 7, retentionDays: 3 });
    const delayMs = 3_600_000;
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: text(500), delayMs });
    const body = await read(s, task.id, payloadSortKey());
    expect(body?.expiresAt).toBe(Math.floor((task.availableAt + 10 * 86_400_000) / 1000));
    expect(body?.expiresAt).toBe(bodyExpiry(task.availableAt, s.config));
  });

  it('a list shows neither payload nor result; GET /tasks/{id} shows both, a large result from its own item', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: { small: true } });
    const { claimed } = await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 });
    const result = { report: text(5_000) };
    await s.store.complete({ lease: claimed[0]!.lease, result });
    const item = (await read(s, task.id)) as TaskItem;
    expect(item.result).toBeUndefined();
    expect(item.resultToken).toBe(1);
    expect((await read(s, task.id, outcomeSortKey(1)))?.result).toBe(JSON.stringify(result));
    const [listed] = (await s.store.list({ owner: OWNER })).tasks;
    expect(listed).toMatchObject({ id: task.id, status: 'SUCCESS' });
    expect(listed).not.toHaveProperty('payload');
    expect(listed).not.toHaveProperty('result');
    expect(await s.store.get({ id: task.id })).toMatchObject({ payload: { small: true }, result });
  });

  it('a stale holder’s large result is never shown: its item is keyed by its own token, which the task never names', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: 1 });
    const stale = (await s.store.claim({ workerId: 'paused', types: [TYPE], max: 1 })).claimed[0]!;
    // The holder pauses past its lease; recovery requeues the task and another worker takes it.
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1_000);
    expect((await s.store.recover()).requeued).toBe(1);
    const fresh = (await s.store.claim({ workerId: 'fresh', types: [TYPE], max: 1 })).claimed[0]!;
    expect(fresh.lease.token).toBe(2);
    await s.store.complete({ lease: fresh.lease, result: { by: 'fresh', pad: text(300) } });
    // The paused holder wakes and writes: its result item lands (no condition can stop a put of its own
    // key), its outcome write is refused by the fence.
    await expect(
      s.store.complete({ lease: stale.lease, result: { by: 'paused', pad: text(300) } }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await read(s, task.id, outcomeSortKey(1)))?.result).toContain('paused');
    expect(await s.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', result: { by: 'fresh' } });
  });

  it('a long error: the task item keeps its start, GET shows it whole; a later short error replaces both', async () => {
    const s = await createTestStore(server.endpoint, { backoffBaseMs: 1, backoffMaxMs: 1 });
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: 1, maxAttempts: 3 });
    const long = `stack: ${'at handler (file.ts:1:1)\n'.repeat(100)}`;
    const first = (await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 })).claimed[0]!;
    await s.store.fail({ lease: first.lease, error: long });
    const item = (await read(s, task.id)) as TaskItem;
    expect(Buffer.byteLength(item.error!)).toBeLessThanOrEqual(INLINE_BODY_BYTES);
    expect(item.error!.endsWith('…')).toBe(true);
    expect(long.startsWith(item.error!.slice(0, -1))).toBe(true);
    expect((await s.store.get({ id: task.id })).error).toBe(long);
    expect((await s.store.list({ owner: OWNER })).tasks[0]!.error).toBe(item.error);

    s.clock.advance(10);
    await s.store.recover();
    const second = (await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 })).claimed[0]!;
    await s.store.fail({ lease: second.lease, error: 'timeout' });
    expect((await s.store.get({ id: task.id })).error).toBe('timeout');
    expect(((await read(s, task.id)) as TaskItem).errorToken).toBeUndefined();
  });

  it('a task whose payload item is gone fails PAYLOAD_MISSING at its claim, and its handler never gets it', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: text(1_000) });
    // As DynamoDB's TTL does once the task waited past maxWaitDays.
    await s.doc.send(
      new DeleteCommand({
        TableName: s.config.tableName,
        Key: { ...taskKey(task.id), sk: payloadSortKey() },
      }),
    );
    const { claimed } = await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 });
    expect(claimed).toHaveLength(0);
    const failed = await s.store.get({ id: task.id });
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(failed.error).toMatch(/^PAYLOAD_MISSING/);
    expect(failed).not.toHaveProperty('payload');
  });

  it('two requests under one idempotency key write different payload items; the task keeps the first', async () => {
    const s = await createTestStore(server.endpoint);
    const key = 'order-1';
    const first = text(400);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: first, idempotencyKey: key });
    await expect(
      s.store.enqueue({ type: TYPE, owner: OWNER, payload: text(401), idempotencyKey: key }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
    const again = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: first, idempotencyKey: key });
    expect(again).toMatchObject({ created: false, task: { id: task.id, payload: first } });
    expect((await s.store.get({ id: task.id })).payload).toBe(first);
    const { claimed } = await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 });
    expect(claimed[0]!.task.payload).toBe(first);
  });
});
