/**
 * On-demand throttling in the sim's DynamoDB gate, with the limits scaled by 0.01 (10 WCU / 30 RCU a
 * second per partition-key value, 40 / 120 per table and per GSI) and a frozen clock, so buckets refill
 * only when the test moves time: a hot partition key is throttled while another key's writes pass, a
 * hot GSI partition throttles the base-table writes that would land in it, and the answers are the
 * ThrottlingException (with throttlingReasons) the AWS SDK classifies as throttling and retries.
 */
import {
  BatchWriteItemCommand,
  GetItemCommand,
  PutItemCommand,
  ThrottlingException,
  UpdateItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Throttle, type Demand } from '../tools/sim/dynamodb/throttle.js';
import { warmThroughputOf } from '../tools/sim/dynamodb/table-from-template.js';
import { GSI, GSI_ARN, startHarness, TABLE, TABLE_ARN, type Harness } from './sim-dynamodb-harness.js';

let clock = 1_000_000;
let h: Harness;
let client: DynamoDBClient;

beforeAll(async () => {
  h = await startHarness({ throttleScale: 0.01, indexLag: false, ttl: false, now: () => clock });
  client = h.client(1);
});
afterAll(() => h.close());
// Each test starts with every bucket full.
beforeEach(() => {
  clock += 10_000;
});

const put = (pk: string, gpk?: string, c = client) =>
  c.send(
    new PutItemCommand({ TableName: TABLE, Item: { pk: { S: pk }, ...(gpk ? { gpk: { S: gpk } } : {}) } }),
  );

const thrown = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (error) {
    return error as ThrottlingException;
  }
  throw new Error('expected the request to be throttled');
};

describe('sim DynamoDB: on-demand throttling', () => {
  it('a partition key over its write limit is throttled while another key passes, until a second has passed', async () => {
    for (let i = 0; i < 10; i++) await put('hot');
    const error = await thrown(put('hot'));
    expect(error).toBeInstanceOf(ThrottlingException);
    expect(error.name).toBe('ThrottlingException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.throttlingReasons).toEqual([
      { reason: 'TableWriteKeyRangeThroughputExceeded', resource: TABLE_ARN },
    ]);
    expect(error.message).toMatch(/Throughput exceeds the current capacity of your table or index/);
    await put('cold');
    clock += 1_000;
    await put('hot');
    const stats = h.gate.stats().throttled;
    expect(stats.byResource[TABLE]).toBeGreaterThanOrEqual(1);
    expect(stats.byPartitionKey[`${TABLE} S:hot`]).toBe(1);
  });

  it('the AWS SDK retries the answer as throttling', async () => {
    for (let i = 0; i < 10; i++) await put('retried');
    const error = await thrown(put('retried', undefined, h.client(3)));
    expect(error.name).toBe('ThrottlingException');
    expect(error.$metadata.attempts).toBe(3);
  });

  it('the table as a whole takes 40 WCU a second at this scale', async () => {
    for (let k = 0; k < 4; k++) for (let i = 0; i < 10; i++) await put(`spread-${k}`);
    const error = await thrown(put('spread-new'));
    expect(error.throttlingReasons).toEqual([
      { reason: 'TableWriteAccountLimitExceeded', resource: TABLE_ARN },
    ]);
  });

  it('a hot GSI partition throttles the base-table writes that would write to it', async () => {
    for (let i = 0; i < 10; i++) await put(`member-${i}`, 'hot-group');
    const error = await thrown(put('member-new', 'hot-group'));
    expect(error.throttlingReasons).toEqual([
      { reason: 'IndexWriteKeyRangeThroughputExceeded', resource: GSI_ARN },
    ]);
    expect(error.message).toMatch(/global secondary indexes/);
    // Items of other groups, and items outside the index, are written.
    await put('member-new', 'cool-group');
    await put('member-new-2');
    expect(h.gate.stats().throttled.byResource[`${TABLE}/index/${GSI}`]).toBe(1);
    // An update that would move an item into the hot partition is throttled too.
    const moved = await thrown(
      client.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: { pk: { S: 'member-new' } },
          UpdateExpression: 'SET #g = :hot',
          ExpressionAttributeNames: { '#g': 'gpk' },
          ExpressionAttributeValues: { ':hot': { S: 'hot-group' } },
        }),
      ),
    );
    expect(moved.throttlingReasons).toEqual([
      { reason: 'IndexWriteKeyRangeThroughputExceeded', resource: GSI_ARN },
    ]);
  });

  it('reads: 30 strongly consistent reads of one key a second, or 60 eventually consistent', async () => {
    await put('read-me');
    clock += 1_000;
    const get = (ConsistentRead: boolean) =>
      client.send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'read-me' } }, ConsistentRead }));
    for (let i = 0; i < 30; i++) await get(true);
    const error = await thrown(get(true));
    expect(error.throttlingReasons).toEqual([
      { reason: 'TableReadKeyRangeThroughputExceeded', resource: TABLE_ARN },
    ]);
    clock += 1_000;
    for (let i = 0; i < 60; i++) await get(false);
    await thrown(get(false));
  });

  it('BatchWriteItem hands the throttled items back as UnprocessedItems', async () => {
    for (let i = 0; i < 10; i++) await put('batch-hot');
    const out = await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [TABLE]: [
            { PutRequest: { Item: { pk: { S: 'batch-hot' }, v: { N: '1' } } } },
            { PutRequest: { Item: { pk: { S: 'batch-cold' } } } },
          ],
        },
      }),
    );
    expect(out.UnprocessedItems?.[TABLE]).toEqual([
      { PutRequest: { Item: { pk: { S: 'batch-hot' }, v: { N: '1' } } } },
    ]);
    const cold = await client.send(
      new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'batch-cold' } }, ConsistentRead: true }),
    );
    expect(cold.Item).toBeDefined();
  });
});

describe('sim DynamoDB: throttling off', () => {
  it('--throttle-scale 0 lets a hot key write as fast as the emulator goes', async () => {
    const off = await startHarness({ throttleScale: 0, indexLag: false, ttl: false, now: () => clock });
    try {
      const c = off.client(1);
      for (let i = 0; i < 30; i++) await put('hot', undefined, c);
      expect(off.gate.stats().throttled.total).toBe(0);
    } finally {
      await off.close();
    }
  });
});

describe('sim DynamoDB: throughput buckets past 20,000 partition keys', () => {
  const write = (partition?: string): Demand => ({
    kind: 'write',
    table: TABLE,
    arn: TABLE_ARN,
    ...(partition === undefined ? {} : { partition }),
  });

  it('a table bucket part-used is kept (not dropped and refilled) when the full key buckets are dropped', () => {
    const throttle = new Throttle(0.01, () => clock);
    // The table's 40 WCU: 25 used, leaving 15, more than a key bucket's full 10.
    throttle.charge(write('used'), 25);
    for (let i = 0; i < 20_010; i++) throttle.blocked([write(`k${i}`)]);
    throttle.charge(write('more'), 15);
    expect(throttle.blocked([write()])?.reason).toBe('TableWriteAccountLimitExceeded');
  });

  it('with every bucket in use, new keys do not rescan them all each time', () => {
    let reads = 0;
    // The clock is read once per request, once per new bucket, and once per pruning scan.
    const throttle = new Throttle(0.01, () => (reads++, clock));
    for (let i = 0; i < 20_010; i++) throttle.charge(write(`busy${i}`), 20);
    reads = 0;
    for (let i = 0; i < 1_000; i++) throttle.blocked([write(`new${i}`)]);
    expect(reads).toBeLessThan(2 * 1_000 + 10);
  });
});

describe('sim DynamoDB: warm throughput from the template', () => {
  const write = (index?: string): Demand => ({
    kind: 'write',
    table: TABLE,
    arn: index ? `${TABLE_ARN}/index/${index}` : TABLE_ARN,
    ...(index ? { index } : {}),
  });

  it('a table or GSI with warm throughput takes its rate, scaled; one without keeps a new table’s 4,000', () => {
    const warm = new Map([
      [TABLE, { write: 7_000, read: 12_000 }],
      [`${TABLE}/index/delays`, { write: 5_000 }],
    ]);
    const throttle = new Throttle(0.01, () => clock, warm);
    throttle.charge(write(), 69);
    expect(throttle.blocked([write()])).toBeUndefined();
    throttle.charge(write(), 1);
    expect(throttle.blocked([write()])?.reason).toBe('TableWriteAccountLimitExceeded');
    throttle.charge(write('delays'), 49);
    expect(throttle.blocked([write('delays')])).toBeUndefined();
    throttle.charge(write('delays'), 1);
    expect(throttle.blocked([write('delays')])?.reason).toBe('IndexWriteAccountLimitExceeded');
    throttle.charge(write('owner'), 40);
    expect(throttle.blocked([write('owner')])?.reason).toBe('IndexWriteAccountLimitExceeded');
    expect(throttle.stats().byResource).toEqual({});
  });
});

describe('sim DynamoDB: warm throughput read from a GlobalTable resource', () => {
  it('the table’s and each GSI’s WarmThroughput, keyed as the throttle names them; none set, none read', () => {
    const gsi = (IndexName: string, WarmThroughput?: { WriteUnitsPerSecond: number }) => ({
      IndexName,
      KeySchema: [{ AttributeName: 'p', KeyType: 'HASH' as const }],
      Projection: { ProjectionType: 'KEYS_ONLY' as const },
      ...(WarmThroughput ? { WarmThroughput } : {}),
    });
    const base = { KeySchema: [], AttributeDefinitions: [] };
    const rates = warmThroughputOf('t', {
      ...base,
      WarmThroughput: { ReadUnitsPerSecond: 12_000, WriteUnitsPerSecond: 7_000 },
      GlobalSecondaryIndexes: [gsi('delays', { WriteUnitsPerSecond: 4_000 }), gsi('owner')],
    });
    expect([...rates]).toEqual([
      ['t', { read: 12_000, write: 7_000 }],
      ['t/index/delays', { write: 4_000 }],
    ]);
    expect(warmThroughputOf('t', { ...base, GlobalSecondaryIndexes: [gsi('owner')] }).size).toBe(0);
  });
});
