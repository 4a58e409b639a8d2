/**
 * GSI lag in the sim's DynamoDB gate: a Query on a GSI sees a write only after a delay drawn per write
 * (here from injected draws), still lists a changed item under its old index key and old attributes
 * and a deleted one until then, applies each item's writes in order, and leaves base-table reads current.
 */
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDynalite } from '../tools/local/dynalite.js';
import { untilTableStatus } from '../shared/store/table-setup.js';
import { Backend } from '../tools/sim/dynamodb/backend.js';
import { IndexLag } from '../tools/sim/dynamodb/index-lag.js';
import { describeTable, type TableDescription } from '../tools/sim/dynamodb/table-schemas.js';
import { draws, GSI, sleep, startHarness, TABLE, TABLE_ARN, type Harness } from './sim-dynamodb-harness.js';

const MIN = 300;
const MAX = 700;

describe('sim DynamoDB: GSI propagation lag', () => {
  let h: Harness;
  // Per write: 0.5 (the first three tests), then 0.9, 0.6, 0.3, 0 for the ordering test's writes.
  const random = draws(0.5, 0.5, 0.5, 0.5, 0.5, 0.9, 0.6, 0.3, 0);
  beforeAll(async () => {
    h = await startHarness({ indexLag: { minMs: MIN, maxMs: MAX }, random, throttleScale: 0, ttl: false });
  });
  afterAll(() => h.close());

  const group = async (gpk: string) => {
    const out = await h.client().send(
      new QueryCommand({
        TableName: TABLE,
        IndexName: GSI,
        KeyConditionExpression: 'gpk = :g',
        ExpressionAttributeValues: { ':g': { S: gpk } },
      }),
    );
    return (out.Items ?? []).map((i) => ({ pk: i.pk!.S, n: i.n?.N }));
  };
  /** Polls a group until the predicate holds; answers when it first held (ms since `from`). */
  const until = async (gpk: string, ok: (items: { pk?: string; n?: string }[]) => boolean, from: number) => {
    for (;;) {
      if (ok(await group(gpk))) return Date.now() - from;
      if (Date.now() - from > 5_000) throw new Error(`group ${gpk} never matched`);
      await sleep(20);
    }
  };

  it('an item written is not in a GSI query for at least minMs, and is there after maxMs', async () => {
    const started = Date.now();
    await h
      .client()
      .send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'a' }, gpk: { S: 'G1' } } }));
    const written = Date.now();
    expect(await group('G1')).toEqual([]);
    // The base table is current at once.
    const base = await h
      .client()
      .send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'a' } }, ConsistentRead: true }));
    expect(base.Item?.gpk?.S).toBe('G1');
    const seenAfter = await until('G1', (items) => items.length === 1, started);
    // The draw of 0.5 makes this write's lag 500 ms: never before minMs, and not long after its lag.
    expect(seenAfter).toBeGreaterThanOrEqual(MIN);
    expect(Date.now() - written).toBeLessThan(MAX + 400);
    await expect.poll(() => h.gate.stats().indexLag).toMatchObject({ enabled: true, pending: 0, applied: 1 });
  });

  it('an item moved from GSI key A to B stays listed under A, with its old attributes, until the lag passes', async () => {
    await h
      .client()
      .send(
        new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'm' }, gpk: { S: 'A' }, n: { N: '1' } } }),
      );
    await until('A', (items) => items.length === 1, Date.now());
    const moved = Date.now();
    await h.client().send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: { pk: { S: 'm' } },
        UpdateExpression: 'SET gpk = :b, n = :n',
        ExpressionAttributeValues: { ':b': { S: 'B' }, ':n': { N: '2' } },
      }),
    );
    expect(await group('A')).toEqual([{ pk: 'm', n: '1' }]);
    expect(await group('B')).toEqual([]);
    expect(Date.now() - moved).toBeLessThan(MIN);
    const seenAfter = await until('B', (items) => items.length === 1, moved);
    expect(seenAfter).toBeGreaterThanOrEqual(MIN);
    expect(await group('A')).toEqual([]);
    expect(await group('B')).toEqual([{ pk: 'm', n: '2' }]);
  });

  it('a deleted item is still listed, then gone', async () => {
    await h
      .client()
      .send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'd' }, gpk: { S: 'D' } } }));
    await until('D', (items) => items.length === 1, Date.now());
    const deleted = Date.now();
    await h.client().send(new DeleteItemCommand({ TableName: TABLE, Key: { pk: { S: 'd' } } }));
    expect(await group('D')).toEqual([{ pk: 'd', n: undefined }]);
    expect(Date.now() - deleted).toBeLessThan(MIN);
    expect(await until('D', (items) => items.length === 0, deleted)).toBeGreaterThanOrEqual(MIN);
  });

  it("an item's writes reach the GSI in order, even when a later write draws a shorter lag", async () => {
    // Lags 660, 540, 420 and 300 ms: each write's would land before the one before it.
    const from = Date.now();
    for (const n of [1, 2, 3, 4])
      await h.client().send(
        new PutItemCommand({
          TableName: TABLE,
          Item: { pk: { S: 'o' }, gpk: { S: 'O' }, n: { N: String(n) } },
        }),
      );
    const seen: number[] = [];
    await until(
      'O',
      (items) => {
        if (items[0]) seen.push(Number(items[0].n));
        return items[0]?.n === '4';
      },
      from,
    );
    await sleep(MAX + 200);
    expect(await group('O')).toEqual([{ pk: 'o', n: '4' }]);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });
});

describe('sim DynamoDB: a gate over a table that already has items', () => {
  it('lists them in GSI queries at once, and follows their later writes', async () => {
    const h = await startHarness(
      { indexLag: { minMs: 100, maxMs: 100 }, throttleScale: 0, ttl: false },
      (emulator) =>
        emulator.send(
          new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'early' }, gpk: { S: 'E' } } }),
        ),
    );
    try {
      const query = async (gpk: string) =>
        (
          await h.client().send(
            new QueryCommand({
              TableName: TABLE,
              IndexName: GSI,
              KeyConditionExpression: 'gpk = :g',
              ExpressionAttributeValues: { ':g': { S: gpk } },
            }),
          )
        ).Items?.map((i) => i.pk!.S);
      expect(await query('E')).toEqual(['early']);
      // Its GSI key removed: it leaves the index after the lag (the gate knew where it was).
      await h.client().send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: { pk: { S: 'early' } },
          UpdateExpression: 'REMOVE gpk',
        }),
      );
      await sleep(300);
      expect(await query('E')).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

describe('sim DynamoDB: index lag off', () => {
  it('--index-lag 0: a GSI query sees a write at once', async () => {
    const h = await startHarness({ indexLag: false, throttleScale: 0, ttl: false });
    try {
      await h
        .client()
        .send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'x' }, gpk: { S: 'X' } } }));
      const out = await h.client().send(
        new QueryCommand({
          TableName: TABLE,
          IndexName: GSI,
          KeyConditionExpression: 'gpk = :g',
          ExpressionAttributeValues: { ':g': { S: 'X' } },
        }),
      );
      expect(out.Items).toHaveLength(1);
      expect(h.gate.stats().indexLag).toEqual({ enabled: false });
    } finally {
      await h.close();
    }
  });
});

describe('sim DynamoDB: the index view of a table with an LSI as well as a GSI', () => {
  it('is made with only the attributes of its key schemas (not the LSI sort key)', async () => {
    const dynalite = await startDynalite();
    const backend = new Backend(dynalite.endpoint);
    try {
      await backend.call('CreateTable', {
        TableName: TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: ['pk', 'sk', 'gpk', 'lsk'].map((AttributeName) => ({
          AttributeName,
          AttributeType: 'S',
        })),
        GlobalSecondaryIndexes: [
          {
            IndexName: GSI,
            KeySchema: [{ AttributeName: 'gpk', KeyType: 'HASH' }],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
        LocalSecondaryIndexes: [
          {
            IndexName: 'by-lsk',
            KeySchema: [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'lsk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
        ],
      });
      const schema = await describeTable(backend, { name: TABLE, arn: TABLE_ARN });
      await new IndexLag(backend, { minMs: 0, maxMs: 1 }).createView(schema);
      const { Table: view } = await backend.call<{ Table: TableDescription }>('DescribeTable', {
        TableName: IndexLag.viewOf(TABLE),
      });
      expect(view.AttributeDefinitions.map((a) => a.AttributeName).sort()).toEqual(['gpk', 'pk', 'sk']);
      expect(view.GlobalSecondaryIndexes?.map((g) => g.IndexName)).toEqual([GSI]);
    } finally {
      backend.close();
      await dynalite.close();
    }
  });
});

describe('sim DynamoDB: the index view while the emulator is slow to create and delete tables', () => {
  it('is ACTIVE when createView answers, also when an old view had to be deleted first', async () => {
    // 150 ms in CREATING or DELETING: a write or CreateTable sent at once is refused, as the CI saw
    // (a gate adopting items met ResourceNotFoundException on a table dynalite had not yet flipped).
    const dynalite = await startDynalite({ tableStatusMs: 150 });
    const backend = new Backend(dynalite.endpoint);
    const statusOf = async (TableName: string) =>
      (await backend.call<{ Table?: { TableStatus?: string } }>('DescribeTable', { TableName })).Table
        ?.TableStatus;
    try {
      await backend.call('CreateTable', {
        TableName: TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: ['pk', 'gpk'].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
        GlobalSecondaryIndexes: [
          {
            IndexName: GSI,
            KeySchema: [{ AttributeName: 'gpk', KeyType: 'HASH' }],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      });
      expect(await statusOf(TABLE)).toBe('CREATING');
      await untilTableStatus(() => statusOf(TABLE), 'ACTIVE', TABLE);
      const schema = await describeTable(backend, { name: TABLE, arn: TABLE_ARN });
      const lag = new IndexLag(backend, { minMs: 0, maxMs: 1 });
      for (const round of [1, 2]) {
        await lag.createView(schema);
        expect(await statusOf(IndexLag.viewOf(TABLE))).toBe('ACTIVE');
        await backend.call('PutItem', {
          TableName: IndexLag.viewOf(TABLE),
          Item: { pk: { S: `round-${round}` }, gpk: { S: 'G' } },
        });
      }
      // The second view started empty: the first one was deleted, not kept.
      const scan = await backend.call<{ Items: unknown[] }>('Scan', { TableName: IndexLag.viewOf(TABLE) });
      expect(scan.Items).toEqual([{ pk: { S: 'round-2' }, gpk: { S: 'G' } }]);
    } finally {
      backend.close();
      await dynalite.close();
    }
  });
});
