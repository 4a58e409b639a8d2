/**
 * Hot partition keys (deploy review, finding 7): one producer's tasks spread over several owner-index
 * partitions and are still listed newest first, every task once, across pages; a large concurrency
 * limit's slots spread over several partitions while a small limit stays one Query a round.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  INDEX,
  limitPartition,
  OWNER_SHARDS,
  ownerShardForId,
  ownerSortKey,
  slotPartitionOf,
  SLOTS_PER_PARTITION,
  slotSortKey,
  taskOwnerPartition,
  taskOwnerPartitionOf,
  taskOwnerPartitions,
} from '../shared/table-layout.js';
import { perPartitionLimit } from '../shared/store/list-page.js';
import { TaskStore } from '../shared/store/task-store.js';
import type { Task } from '../shared/task-model.js';
import type { ConfigInput } from '../shared/config.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const newStore = (overrides: ConfigInput = {}) => createTestStore(server.endpoint, overrides);

/** Every owner-index entry in one partition, read raw (no store code). */
async function indexEntries(t: TestStore, partition: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await t.doc.send(
      new QueryCommand({
        TableName: t.config.tableName,
        IndexName: INDEX.owner.name,
        KeyConditionExpression: '#o = :o',
        ExpressionAttributeNames: { '#o': INDEX.owner.partition },
        ExpressionAttributeValues: { ':o': partition },
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    found.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return found;
}

/** Records the partition of every Query sent (its first key-condition value). */
function queriedPartitions(t: TestStore): string[] {
  const seen: string[] = [];
  t.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') {
        const values = (args.input as { ExpressionAttributeValues?: Record<string, unknown> })
          .ExpressionAttributeValues;
        const first = values ? Object.values(values)[0] : undefined;
        // Marshalled ({ S }) or not yet, depending on where the document client's step runs.
        const text = typeof first === 'string' ? first : (first as { S?: string } | undefined)?.S;
        if (text !== undefined) seen.push(text);
      }
      return next(args);
    },
    { step: 'initialize', name: `queriedPartitions${Math.random()}` },
  );
  return seen;
}

/** A caller's whole list, page by page, with the given page sizes (the last one repeats). */
async function listAll(t: TestStore, owner: string, limit: number) {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await t.store.list({ owner, limit, ...(cursor ? { cursor } : {}) });
    ids.push(...page.tasks.map((task) => task.id));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

const newestFirst = (tasks: Pick<Task, 'createdAt' | 'id'>[]) =>
  [...tasks]
    .sort((a, b) => (ownerSortKey(a.createdAt, a.id) < ownerSortKey(b.createdAt, b.id) ? 1 : -1))
    .map((task) => task.id);

describe('the owner index: one producer’s tasks over several partitions', () => {
  it('one owner’s enqueues land in several owner-index partitions, none under the bare owner, and are listed newest first', async () => {
    const t = await newStore();
    const owner = 'arn:aws:iam::123456789012:role/producer';
    const tasks: Task[] = [];
    for (let i = 0; i < 40; i++) {
      tasks.push((await t.store.enqueue({ type: 'x', owner })).task);
      if (i % 3 === 0) t.clock.advance(1); // some share a millisecond: ties broken by id
    }
    const byPartition = await Promise.all(taskOwnerPartitions(owner).map((p) => indexEntries(t, p)));
    // Spread: more than one partition holds this owner's tasks (the old layout had one, `owner`).
    expect(byPartition.filter((entries) => entries.length > 0).length).toBeGreaterThan(1);
    expect(Math.max(...byPartition.map((entries) => entries.length))).toBeLessThan(tasks.length);
    expect(await indexEntries(t, owner)).toEqual([]);
    // Each task sits in the partition its id names, and every task is in exactly one.
    const placed = byPartition.flatMap((entries, shard) =>
      entries.map((e) => [String(e.pk).slice('TASK#'.length), taskOwnerPartition(owner, shard)]),
    );
    expect(placed.map(([id]) => id).sort()).toEqual(tasks.map((task) => task.id).sort());
    for (const [id, partition] of placed) expect(partition).toBe(taskOwnerPartitionOf(owner, id!));

    // Listed: every task once, newest first, whatever the page size.
    for (const limit of [3, 100]) expect(await listAll(t, owner, limit)).toEqual(newestFirst(tasks));
  });

  it('a page reads every shard once, in parallel, and then its tasks by key', async () => {
    const t = await newStore();
    const owner = 'producer';
    for (let i = 0; i < 120; i++) {
      await t.store.enqueue({ type: 'x', owner });
      t.clock.advance(1);
    }
    const partitions = queriedPartitions(t);
    t.meter.reset();
    const page = await t.store.list({ owner, limit: 100 });
    expect(page.tasks).toHaveLength(100);
    expect(page.nextCursor).toBeDefined();
    // One Query per shard (each asking for perPartitionLimit(100, 8) = 21 entries), one BatchGetItem.
    expect(perPartitionLimit(100, OWNER_SHARDS)).toBe(21);
    expect([...partitions].sort()).toEqual([...taskOwnerPartitions(owner)].sort());
    expect(t.meter.count('Query')).toBe(OWNER_SHARDS);
    expect(t.meter.count('BatchGetItem')).toBe(1);
  });

  it('property: random page sizes with enqueues between pages list every task present at the start once, newest first', async () => {
    const t = await newStore();
    // Three ids in four land in one shard: its partition runs out within a round and must be read again
    // before the merge goes on (evenly spread ids almost never need that second read).
    let n = 0;
    const skewedIds = () => {
      for (;;) {
        const id = `s-${String(++n).padStart(7, '0')}`;
        if (n % 4 === 0 || ownerShardForId(id) === 0) return id;
      }
    };
    const store = new TaskStore({ doc: t.doc, config: t.config, clock: t.clock, newId: skewedIds });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.array(
          fc.record({
            limit: fc.integer({ min: 1, max: 15 }),
            added: fc.integer({ min: 0, max: 3 }),
            // Zero: the next task shares the last one's millisecond (order then rests on the id).
            tick: fc.constantFrom(0, 0, 1, 5),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (initial, steps) => {
          const owner = `owner-${++run}`;
          const other = `other-${run}`;
          const enqueue = async (who: string, tick: number) => {
            const { task } = await store.enqueue({ type: 'x', owner: who });
            t.clock.advance(tick);
            return task;
          };
          const before: Task[] = [];
          for (let i = 0; i < initial; i++) {
            before.push(await enqueue(owner, i % 2));
            if (i % 4 === 0) await enqueue(other, 0);
          }
          const added = new Set<string>();
          const listed: Task[] = [];
          let cursor: string | undefined;
          let step = 0;
          do {
            const { limit, added: n, tick } = steps[step++ % steps.length]!;
            const page = await store.list({ owner, limit, ...(cursor ? { cursor } : {}) });
            expect(page.tasks.length).toBeLessThanOrEqual(limit);
            listed.push(...page.tasks);
            cursor = page.nextCursor;
            for (let i = 0; i < n; i++) added.add((await enqueue(i % 2 ? other : owner, tick)).id);
          } while (cursor);
          const ids = listed.map((task) => task.id);
          // Only this owner's tasks, none twice, newest first across every page.
          expect(listed.every((task) => task.owner === owner)).toBe(true);
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids).toEqual(newestFirst(listed));
          // Every task there before the first page, exactly once; any added meanwhile at most once.
          expect(ids.filter((id) => !added.has(id))).toEqual(newestFirst(before));
        },
      ),
      { numRuns: 15 },
    );
  });

  it('a cursor carries the owner, not a shard: another owner’s cursor is refused, and an old-shape cursor works', async () => {
    const t = await newStore();
    const tasks: Task[] = [];
    for (let i = 0; i < 5; i++) {
      tasks.push((await t.store.enqueue({ type: 'x', owner: 'alice' })).task);
      t.clock.advance(1);
    }
    const first = await t.store.list({ owner: 'alice', limit: 2 });
    const cursor = JSON.parse(Buffer.from(first.nextCursor!, 'base64url').toString()) as Record<
      string,
      string
    >;
    expect(cursor.ownerPk).toBe('alice');
    await expect(t.store.list({ owner: 'bob', cursor: first.nextCursor! })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    const rest = await t.store.list({ owner: 'alice', limit: 10, cursor: first.nextCursor! });
    expect([...first.tasks, ...rest.tasks].map((task) => task.id)).toEqual(newestFirst(tasks));
  });
});

describe('concurrency-limit slots over several partitions', () => {
  it('a limit up to SLOTS_PER_PARTITION is read with one Query a claim round', async () => {
    const t = await newStore({ globalConcurrency: SLOTS_PER_PARTITION });
    for (let i = 0; i < 3; i++) await t.store.enqueue({ type: 'x', owner: 'o' });
    const partitions = queriedPartitions(t);
    const round = await t.store.claim({ workerId: 'W', types: ['x'], max: 3 });
    expect(round.claimed).toHaveLength(3);
    expect(partitions.filter((p) => p.startsWith('LIMIT#'))).toEqual([limitPartition('global')]);
  });

  it('a large limit: every slot item is in its index’s partition, free slots in later partitions are taken, renewed and freed there, and the limit holds', async () => {
    const limit = 2 * SLOTS_PER_PARTITION + 10;
    const t = await newStore({ globalConcurrency: limit });
    const now = t.clock.now();
    const future = now + 10 * 86_400_000;
    const released = [SLOTS_PER_PARTITION + 50, 2 * SLOTS_PER_PARTITION + 5]; // partitions 1 and 2
    const expired = 2 * SLOTS_PER_PARTITION + 2; // a crashed holder's, its lease long run out
    const items = Array.from({ length: limit }, (_, i) => {
      const key = { pk: limitPartition('global', slotPartitionOf(i)), sk: slotSortKey(i) };
      if (released.includes(i)) return { ...key, slotToken: 3 };
      if (i === expired) return { ...key, slotToken: 4, holder: 'dead', leaseUntil: now - 600_000 };
      return { ...key, slotToken: 1, holder: 'other', leaseUntil: future, taskId: `busy-${i}` };
    });
    for (let i = 0; i < items.length; i += 25)
      await t.doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [t.config.tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })),
          },
        }),
      );
    for (let i = 0; i < 5; i++) await t.store.enqueue({ type: 'x', owner: 'o' });

    const partitions = queriedPartitions(t);
    const round = await t.store.claim({ workerId: 'W', types: ['x'], max: 5 });
    // Each of the limit's three partitions read once this round, and no other.
    expect(partitions.filter((p) => p.startsWith('LIMIT#')).sort()).toEqual(
      [0, 1, 2].map((p) => limitPartition('global', p)).sort(),
    );
    const taken = round.claimed.map((c) => c.lease.slots[0]!.index).sort((a, b) => a - b);
    expect(taken).toEqual([expired, ...released].sort((a, b) => a - b));

    const slotItems = async () =>
      (await t.scanAll()).filter((i) => String(i.pk).startsWith('LIMIT#')) as Record<string, any>[];
    const all = await slotItems();
    expect(all).toHaveLength(limit); // no slot item written anywhere but its own place
    for (const s of all)
      expect(s.pk).toBe(limitPartition('global', slotPartitionOf(Number(String(s.sk).slice(5)))));
    const heldBy = (items: Record<string, any>[], holder: string) =>
      items.filter((s) => s.holder === holder && s.leaseUntil > t.clock.now());
    expect(
      heldBy(all, 'W')
        .map((s) => s.pk)
        .sort(),
    ).toEqual(taken.map((i) => limitPartition('global', slotPartitionOf(i))).sort());

    // Renewal extends the slots where they are.
    t.clock.advance(10_000);
    const renewed = await t.store.renew({ leases: round.claimed.map((c) => c.lease) });
    expect(renewed.every((r) => r.outcome === 'renewed')).toBe(true);
    expect(heldBy(await slotItems(), 'W').every((s) => s.leaseUntil >= t.clock.now() + 50_000)).toBe(true);

    // The limit holds: every slot is held, so another claimer gets nothing.
    t.clock.advance(t.config.pollIntervalMs + 1);
    expect((await t.peer().claim({ workerId: 'C', types: ['x'], max: 5 })).claimed).toEqual([]);

    // Completing frees the slot in its own partition; the next claim takes exactly that one.
    const done = round.claimed.find((c) => c.lease.slots[0]!.index === released[1])!;
    await t.store.complete({ lease: done.lease });
    t.clock.advance(t.config.pollIntervalMs + 1);
    const next = await t.peer().claim({ workerId: 'C', types: ['x'], max: 5 });
    expect(next.claimed.map((c) => c.lease.slots[0]!.index)).toEqual([released[1]]);
  });
});
