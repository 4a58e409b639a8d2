/**
 * Review 2, finding 6: GET read the task's whole partition, which grew with body items no task names
 * (a payload written for each refused reuse of an idempotency key; an earlier attempt's long error),
 * 8.2 MB per read after 40 refused re-sends in repro/get-partition-read.ts. Now a read takes the task
 * item and the body items it names; a repeated or refused idempotent enqueue writes no payload; one
 * that loses the race after writing its payload marks that item for the table's TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictError } from '../shared/errors.js';
import { outcomeSortKey, payloadSortKey } from '../shared/store/body-layout.js';
import { TTL_ATTRIBUTE, taskKey } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { READ_OPERATIONS } from './support/request-meter.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const OWNER = 'arn:aws:iam::123456789012:role/orders-service-producer';
const TYPE = 'invoice.send';
const big = (tag: string) => ({ tag, blob: 'x'.repeat(200_000) });

/** Every item of the task's partition, by sort key. */
async function partition(s: TestStore, id: string): Promise<Map<string, Record<string, unknown>>> {
  const pk = taskKey(id).pk;
  return new Map((await s.scanAll()).filter((i) => i.pk === pk).map((i) => [String(i.sk), i]));
}

const readUnits = (s: TestStore) =>
  READ_OPERATIONS.reduce((sum, op) => sum + (s.meter.tableCapacity.get(op) ?? 0), 0);

describe('a task partition holds no body item no task names, and a read takes only the named ones', () => {
  it('a repeat or a refused reuse of an idempotency key writes no payload; GET reads what it did before', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({
      type: TYPE,
      owner: OWNER,
      payload: big('first'),
      idempotencyKey: 'k',
    });
    s.meter.reset();
    await s.store.get({ id: task.id, owner: OWNER });
    const freshRead = readUnits(s);
    expect(freshRead).toBeGreaterThan(0);

    s.meter.reset();
    for (let i = 0; i < 10; i++)
      await expect(
        s.store.enqueue({ type: TYPE, owner: OWNER, payload: big(`other-${i}`), idempotencyKey: 'k' }),
      ).rejects.toBeInstanceOf(IdempotencyConflictError);
    const repeat = await s.store.enqueue({
      type: TYPE,
      owner: OWNER,
      payload: big('first'),
      idempotencyKey: 'k',
    });
    expect(repeat).toMatchObject({ created: false, task: { id: task.id } });
    // Eleven requests, one small read each: nothing written.
    expect(s.meter.count('PutItem', 'UpdateItem')).toBe(0);
    const keys = [...(await partition(s, task.id)).keys()];
    expect(keys.filter((sk) => sk.startsWith('PAYLOAD#'))).toHaveLength(1);
    expect(keys).toHaveLength(2);

    s.meter.reset();
    expect((await s.store.get({ id: task.id, owner: OWNER })).payload).toEqual(big('first'));
    expect(readUnits(s)).toBe(freshRead);
  });

  it('an enqueue that loses the race to another request of its key after writing its payload marks it for TTL', async () => {
    const s = await createTestStore(server.endpoint);
    // Hold the first task put until the other request has enqueued: both read no task, both write
    // their payloads, the held one's put is refused.
    let releaseHeld!: () => void;
    const held = new Promise<void>((r) => (releaseHeld = r));
    let puts = 0;
    s.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutItemCommand' && ++puts === 1) await held;
        return next(args);
      },
      { step: 'initialize', name: 'holdFirstTaskPut' },
    );
    const loser = s.store.enqueue({
      type: TYPE,
      owner: OWNER,
      payload: big('loser'),
      idempotencyKey: 'race',
    });
    await new Promise((r) => setTimeout(r, 200));
    const winner = await s
      .peer()
      .enqueue({ type: TYPE, owner: OWNER, payload: big('winner'), idempotencyKey: 'race' });
    releaseHeld();
    await expect(loser).rejects.toBeInstanceOf(IdempotencyConflictError);

    const items = await partition(s, winner.task.id);
    const named = payloadSortKey(String(items.get('TASK')!.requestHash));
    const payloads = [...items.entries()].filter(([sk]) => sk.startsWith('PAYLOAD#'));
    expect(payloads).toHaveLength(2);
    const now = s.clock.now() / 1000;
    for (const [sk, item] of payloads) {
      if (sk === named) expect(Number(item[TTL_ATTRIBUTE])).toBeGreaterThan(now);
      else expect(Number(item[TTL_ATTRIBUTE])).toBeLessThanOrEqual(now);
    }
  });

  it("an earlier attempt's long error is marked for TTL when the next replaces it; GET reads only the named one", async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: 1, maxAttempts: 3 });
    const longError = (n: number) => `attempt ${n}: ${'e'.repeat(3000)}`;
    for (let n = 1; n <= 2; n++) {
      const [claimed] = (await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed;
      await s.store.fail({ lease: claimed!.lease, error: longError(n), backoff: { baseMs: 0, maxMs: 0 } });
    }
    const items = await partition(s, task.id);
    const errorItems = [...items.entries()].filter(([sk]) => sk.startsWith('OUTCOME#'));
    expect(errorItems).toHaveLength(2);
    // The first attempt's error item, replaced on the task by the second's, is marked for TTL.
    const named = outcomeSortKey(Number(items.get('TASK')!.errorToken));
    const now = s.clock.now() / 1000;
    for (const [sk, item] of errorItems)
      if (sk === named) expect(Number(item[TTL_ATTRIBUTE])).toBeGreaterThan(now);
      else expect(Number(item[TTL_ATTRIBUTE])).toBeLessThanOrEqual(now);
    s.meter.reset();
    const got = await s.store.get({ id: task.id, owner: OWNER });
    expect(String(got.error)).toMatch(/^attempt 2:/);
    // The task item and the one error item it names: two small items, in two requests.
    expect(s.meter.count(...READ_OPERATIONS)).toBe(2);
    expect(s.meter.count('Query')).toBe(0);
  });
});
