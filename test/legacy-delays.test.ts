/**
 * Upgrading to the delay index (review 2, MEDIUM-4): a delayed task queued by an earlier version waits
 * under `DELAY#<shard>` in the lease index's keys, where nothing reads delays now. The recovery sweep
 * moves it into the delay index, so it is promoted and runs; a task an old worker changed meanwhile is
 * left alone. The watch that bounds the looking, on a fixed clock.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ensureTable, TableLayoutOutdatedError, untilTableActive } from '../shared/store/table-setup.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { LEGACY_QUIET_MS, LegacyDelayWatch, moveLegacyDelays } from '../shared/store/legacy-delays.js';
import { createTableInput, delaySweepPartition, INDEX, shardForId, taskKey } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const logger = new Logger({ serviceName: 'leasehold-recovery', logLevel: 'SILENT' });

/** Sets the legacy delay keys (`sweepPk` = DELAY#<shard>, `sweepAt`) on a task item, taking away its delay-index keys. */
const writeLegacyKeys = (t: TestStore, id: string, partition: string, at: number) =>
  t.doc.send(
    new UpdateCommand({
      TableName: t.config.tableName,
      Key: taskKey(id),
      UpdateExpression: 'SET #lp = :p, #la = :at REMOVE #dp, #da',
      ExpressionAttributeNames: {
        '#lp': INDEX.lease.partition,
        '#la': INDEX.lease.sort,
        '#dp': INDEX.delay.partition,
        '#da': INDEX.delay.sort,
      },
      ExpressionAttributeValues: { ':p': partition, ':at': at },
    }),
  );

/** A delayed task as the version before the split wrote it: its delay entry under the lease index's keys. */
async function legacyDelayed(t: TestStore, delayMs: number) {
  const { task } = await t.store.enqueue({ type: 'mail', owner: 'o', payload: { n: 1 }, delayMs });
  await writeLegacyKeys(t, task.id, delaySweepPartition(shardForId(task.id)), task.availableAt);
  return task;
}

const itemOf = async (t: TestStore, id: string) =>
  (await t.scanAll()).find((i) => i.id === id) as Record<string, unknown>;

const sweep = (t: TestStore, legacy?: LegacyDelayWatch) =>
  runRecoverySweep(t.store, {
    clock: t.clock,
    metrics: new RecordingMetrics(),
    logger,
    ...(legacy ? { legacy } : {}),
  });

describe('delayed tasks queued before the delay index (dynalite)', () => {
  it('are invisible to the timekeeper and the sweep until moved; the sweep with a watch moves them and they run', async () => {
    const t = await createTestStore(server.endpoint);
    const task = await legacyDelayed(t, 5_000);
    const enqueuedAsNew = (await t.store.enqueue({ type: 'mail', owner: 'o', delayMs: 5_000 })).task;
    t.clock.advance(6_000);
    // What the failure would be without the move: nothing reads delays from the lease index.
    expect((await t.store.dueDelayed({ before: t.clock.now(), limit: 100 })).map((d) => d.id)).toEqual([
      enqueuedAsNew.id,
    ]);
    expect((await sweep(t)).promoted).toBe(1);
    expect(await itemOf(t, task.id)).toMatchObject({ status: 'QUEUED', sweepPk: expect.any(String) });

    // With the watch, the same sweep moves it first and then promotes it: due, it is claimed and runs.
    const report = await sweep(t, new LegacyDelayWatch());
    expect(report.promoted).toBe(1);
    const moved = await itemOf(t, task.id);
    expect(moved.sweepPk).toBeUndefined();
    expect(moved.sweepAt).toBeUndefined();
    const round = await t.store.claim({ workerId: 'w', types: ['mail'], max: 5 });
    expect(round.claimed.map((c) => c.task.id).sort()).toEqual([enqueuedAsNew.id, task.id].sort());
    const lease = round.claimed.find((c) => c.task.id === task.id)!;
    expect(lease.task.payload).toEqual({ n: 1 });
  });

  it('a task not yet due lands in the delay index with its due time, where the timekeeper finds it', async () => {
    const t = await createTestStore(server.endpoint);
    const task = await legacyDelayed(t, 60_000);
    const report = await t.store.moveLegacyDelays();
    expect(report).toEqual({ found: 1, moved: 1 });
    expect(await itemOf(t, task.id)).toMatchObject({
      delayPk: delaySweepPartition(shardForId(task.id)),
      delayAt: task.availableAt,
    });
    expect(await t.store.dueDelayed({ before: task.availableAt, limit: 10 })).toEqual([
      { id: task.id, dueAt: task.availableAt },
    ]);
    // A second pass finds nothing: each task moves once.
    expect(await t.store.moveLegacyDelays()).toEqual({ found: 0, moved: 0 });
  });

  it('a task an old worker changed since the index read is left as it is (the move is conditioned on the entry)', async () => {
    const t = await createTestStore(server.endpoint);
    const task = await legacyDelayed(t, 60_000);
    // An old worker cancels it (and clears its entry) between the legacy read and the move: here, before the
    // pass, with the item's entry left as the lagging index would still show it (status changed).
    await t.doc.send(
      new UpdateCommand({
        TableName: t.config.tableName,
        Key: taskKey(task.id),
        UpdateExpression: 'SET #s = :c',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':c': 'CANCELLED' },
      }),
    );
    expect(await t.store.moveLegacyDelays()).toEqual({ found: 1, moved: 0 });
    const after = await itemOf(t, task.id);
    expect(after.delayPk).toBeUndefined();
    expect(after.status).toBe('CANCELLED');
  });
});

describe('a legacy delayed task cancelled, then retried (review of the move)', () => {
  it('the cancel takes it out of the lease index too; the retry queues it in the ready index alone, never moved into delays', async () => {
    const t = await createTestStore(server.endpoint);
    const task = await legacyDelayed(t, 60_000);
    expect((await t.store.requestCancel({ id: task.id })).status).toBe('CANCELLED');
    const cancelled = await itemOf(t, task.id);
    expect([cancelled.sweepPk, cancelled.sweepAt, cancelled.delayPk]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(await t.store.moveLegacyDelays()).toEqual({ found: 0, moved: 0 });
    await t.store.retry({ id: task.id });
    expect(await t.store.moveLegacyDelays()).toEqual({ found: 0, moved: 0 });
    const retried = await itemOf(t, task.id);
    expect(retried).toMatchObject({ status: 'QUEUED', readyPk: expect.any(String) });
    expect([retried.sweepPk, retried.delayPk, retried.dueReadyPk]).toEqual([undefined, undefined, undefined]);
    // The sweep fixes nothing and fails nothing on it; the task runs.
    expect((await sweep(t, new LegacyDelayWatch())).errors).toEqual([]);
    const round = await t.store.claim({ workerId: 'w', types: ['mail'], max: 1 });
    expect(round.claimed.map((c) => c.task.id)).toEqual([task.id]);
  });

  it('an item that kept legacy keys while in the ready index is refused: it must not land in two indexes', async () => {
    const t = await createTestStore(server.endpoint);
    const { task } = await t.store.enqueue({ type: 'mail', owner: 'o' });
    await writeLegacyKeys(t, task.id, delaySweepPartition(shardForId(task.id)), task.availableAt);
    expect(await t.store.moveLegacyDelays()).toEqual({ found: 1, moved: 0 });
    expect((await itemOf(t, task.id)).delayPk).toBeUndefined();
    // Refused entries do not keep a container looking: only a move does.
    const watch = new LegacyDelayWatch();
    await sweep(t, watch);
    t.clock.advance(LEGACY_QUIET_MS);
    expect(watch.shouldLook(t.clock.now())).toBe(false);
  });

  it('pages past refused entries: a legacy task behind them is still moved', async () => {
    const t = await createTestStore(server.endpoint);
    const task = await legacyDelayed(t, 60_000);
    const { task: stale } = await t.store.enqueue({ type: 'mail', owner: 'o' });
    const partition = delaySweepPartition(shardForId(task.id));
    // A refused entry sorted first (due at 1), pages of one entry: the move pages on and finds the task.
    await writeLegacyKeys(t, stale.id, partition, 1);
    expect(await moveLegacyDelays(t.store.ctx, { moves: 250, page: 1, reads: 1_000 })).toEqual({
      found: 2,
      moved: 1,
    });
    expect((await itemOf(t, task.id)).delayPk).toBe(partition);
  });
});

describe('a table kept from a version before the delay index (the local stack data directory)', () => {
  /** A table in the earlier layout (every index but `delays`) holding `items` task items. */
  async function oldLayoutTable(client: DynamoDBClient, items: number) {
    const name = `old-layout-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}`;
    const current = createTableInput(name);
    await client.send(
      new CreateTableCommand({
        ...current,
        AttributeDefinitions: current.AttributeDefinitions!.filter(
          (a) => a.AttributeName !== INDEX.delay.partition && a.AttributeName !== INDEX.delay.sort,
        ),
        GlobalSecondaryIndexes: current.GlobalSecondaryIndexes!.filter(
          (g) => g.IndexName !== INDEX.delay.name,
        ),
      }),
    );
    await untilTableActive(client, name);
    for (let i = 0; i < items; i++)
      await client.send(
        new PutItemCommand({ TableName: name, Item: { pk: { S: `TASK#kept-${i}` }, sk: { S: 'TASK' } } }),
      );
    return { name, current };
  }

  const clientOf = () =>
    new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });

  it('the local stack own table gets the index (dynalite cannot add one: the table is made anew with its items)', async () => {
    const client = clientOf();
    const { name, current } = await oldLayoutTable(client, 30);
    await ensureTable(client, name, 30_000, { rebuild: true });
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(Table!.GlobalSecondaryIndexes!.map((g) => [g.IndexName, g.IndexStatus]).sort()).toEqual(
      current.GlobalSecondaryIndexes!.map((g) => [g.IndexName, 'ACTIVE']).sort(),
    );
    const query = await client.send(
      new QueryCommand({
        TableName: name,
        IndexName: INDEX.delay.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': INDEX.delay.partition },
        ExpressionAttributeValues: { ':p': { S: 'DELAY#0' } },
      }),
    );
    expect(query.Items).toEqual([]);
    expect((await client.send(new ScanCommand({ TableName: name }))).Count).toBe(30);
    // Again: nothing to add, nothing changes.
    await ensureTable(client, name, 30_000, { rebuild: true });
    expect((await client.send(new ScanCommand({ TableName: name }))).Count).toBe(30);
    client.destroy();
  });

  it('any other table is never rebuilt: a clear error names the index and what to do, and nothing is written', async () => {
    const client = clientOf();
    const { name } = await oldLayoutTable(client, 3);
    const error = await ensureTable(client, name).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TableLayoutOutdatedError);
    expect((error as TableLayoutOutdatedError).code).toBe('TABLE_LAYOUT_OUTDATED');
    expect((error as Error).message).toMatch(/has no index "delays".*Recreate the table/);
    expect((await client.send(new ScanCommand({ TableName: name }))).Count).toBe(3);
    client.destroy();
  });
});

describe('how long a recovery container looks for legacy entries (fixed clock)', () => {
  it('an hour from its first sweep, and an hour past the last one that found any', () => {
    const watch = new LegacyDelayWatch();
    const t0 = 1_000_000;
    expect(watch.shouldLook(t0)).toBe(true);
    watch.noteLook(0, t0);
    expect(watch.shouldLook(t0 + LEGACY_QUIET_MS - 1)).toBe(true);
    watch.noteLook(3, t0 + LEGACY_QUIET_MS - 1);
    expect(watch.shouldLook(t0 + LEGACY_QUIET_MS + 1)).toBe(true);
    expect(watch.shouldLook(t0 + 2 * LEGACY_QUIET_MS - 2)).toBe(true);
    expect(watch.shouldLook(t0 + 2 * LEGACY_QUIET_MS)).toBe(false);
  });
});
